//! Devices: create, get, delete, bind/unbind cards, and the operator's device stop/start with
//! its protect period.

use crate::error::{Checks, StoreResultExt};
use crate::{Admin, AdminError, Evaluation};
use domain::{CardId, Device, DeviceId, NetworkStatus, NewDevice};
use serde::{Deserialize, Serialize};
use stop_resume::{DeviceCardOutcome, Trigger};

/// A device to create.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceBody {
    /// Unique among live devices.
    pub device_no: String,
    #[serde(default = "yes")]
    pub enable_polling: bool,
}

fn yes() -> bool {
    true
}

/// A device with the ids of its cards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceView {
    #[serde(flatten)]
    pub device: Device,
    pub card_ids: Vec<CardId>,
}

/// `POST /devices/{id}/cards`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindBody {
    pub card_id: CardId,
}

/// What a bind or unbind did: the card now, and the decision taken on its new packages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BindOutcome {
    pub card: domain::Card,
    pub evaluation: Evaluation,
}

/// One card of a device stop or start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceCardResult {
    pub card_id: CardId,
    /// `stopped`, `started`, `unchanged` or `failed`.
    pub outcome: String,
    pub error: Option<String>,
}

/// What a device stop or start did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceSwitchReport {
    pub device_id: DeviceId,
    /// `stop` or `start`: the protect period now running.
    pub protect: String,
    /// Seconds the protect period lasts.
    pub protect_secs: u64,
    pub cards: Vec<DeviceCardResult>,
    pub failed: usize,
}

impl Admin {
    pub async fn create_device(&self, body: &DeviceBody) -> Result<Device, AdminError> {
        let mut checks = Checks::default();
        checks.text(&body.device_no, "/device_no", 64);
        checks.finish()?;
        self.stores
            .devices
            .insert(&NewDevice {
                device_no: body.device_no.trim().to_owned(),
                enable_polling: body.enable_polling,
            })
            .await
            .admin()
    }

    pub(crate) async fn device(&self, id: DeviceId) -> Result<Device, AdminError> {
        self.stores
            .devices
            .get(id)
            .await
            .admin()?
            .ok_or_else(|| AdminError::NotFound(format!("device {id}")))
    }

    pub async fn get_device(&self, id: DeviceId) -> Result<DeviceView, AdminError> {
        let device = self.device(id).await?;
        let card_ids = self.stores.cards.ids_of_devices(&[id]).await.admin()?;
        Ok(DeviceView { device, card_ids })
    }

    /// Soft-deletes the device and unbinds its cards (now standalone: covered by their own
    /// packages, so each is rescheduled and re-evaluated). Its protect periods end.
    pub async fn delete_device(&self, id: DeviceId) -> Result<(), AdminError> {
        let cards = self.stores.cards.ids_of_devices(&[id]).await.admin()?;
        if !self.stores.devices.soft_delete(id).await.admin()? {
            return Err(AdminError::NotFound(format!("device {id}")));
        }
        self.protect.clear(id).await?;
        self.lifecycle.on_batch_cards_created(&cards).await?;
        for card in cards {
            self.reevaluate(card, Trigger::Operator).await;
        }
        Ok(())
    }

    /// Binds a card to the device: its packages become the device's, so it is re-evaluated,
    /// and its device flag may differ, so it is rescheduled.
    pub async fn bind_card(
        &self,
        id: DeviceId,
        card_id: CardId,
    ) -> Result<BindOutcome, AdminError> {
        self.device(id).await?;
        let card = self.card(card_id).await.map_err(|_| {
            AdminError::invalid("/card_id", format!("card {card_id} does not exist"))
        })?;
        if card.facts.device_id == Some(id) {
            return Ok(BindOutcome {
                evaluation: self.reevaluate(card_id, Trigger::Operator).await,
                card,
            });
        }
        if let Some(other) = card.facts.device_id {
            return Err(AdminError::invalid(
                "/card_id",
                format!("card {card_id} is bound to device {other}; unbind it first"),
            ));
        }
        self.stores
            .cards
            .set_device(card_id, Some(id))
            .await
            .admin()?;
        self.rebound(card_id).await
    }

    /// Unbinds a card: it becomes standalone, covered by its own packages.
    pub async fn unbind_card(
        &self,
        id: DeviceId,
        card_id: CardId,
    ) -> Result<BindOutcome, AdminError> {
        self.device(id).await?;
        let card = self.card(card_id).await?;
        if card.facts.device_id != Some(id) {
            return Err(AdminError::NotFound(format!(
                "card {card_id} on device {id}"
            )));
        }
        self.stores.cards.set_device(card_id, None).await.admin()?;
        self.rebound(card_id).await
    }

    async fn rebound(&self, card_id: CardId) -> Result<BindOutcome, AdminError> {
        self.lifecycle.on_card_status_changed(card_id).await?;
        let evaluation = self.reevaluate(card_id, Trigger::Operator).await;
        Ok(BindOutcome {
            card: self.card(card_id).await?,
            evaluation,
        })
    }

    /// The operator's device stop (`to = Stopped`) or start: sets the protect period first
    /// (ending the other one), then moves every bound card at the carrier once.
    pub async fn switch_device(
        &self,
        id: DeviceId,
        to: NetworkStatus,
    ) -> Result<DeviceSwitchReport, AdminError> {
        self.device(id).await?;
        match to {
            NetworkStatus::Stopped => self.protect.set_stop(id, self.protect_period).await?,
            NetworkStatus::Online => self.protect.set_start(id, self.protect_period).await?,
        }
        let cards = self.stores.cards.ids_of_devices(&[id]).await.admin()?;
        let mut results = Vec::with_capacity(cards.len());
        let mut failed = 0;
        for card_id in cards {
            // The service aligns the card's queues with its new network status itself.
            let result = match self.stop_resume.switch_for_device(card_id, to).await {
                Ok(outcome) => {
                    let name = match outcome {
                        DeviceCardOutcome::Stopped => "stopped",
                        DeviceCardOutcome::Started => "started",
                        DeviceCardOutcome::Unchanged => "unchanged",
                    };
                    DeviceCardResult {
                        card_id,
                        outcome: name.to_owned(),
                        error: None,
                    }
                }
                Err(e) => {
                    failed += 1;
                    DeviceCardResult {
                        card_id,
                        outcome: "failed".to_owned(),
                        error: Some(e.to_string()),
                    }
                }
            };
            results.push(result);
        }
        Ok(DeviceSwitchReport {
            device_id: id,
            protect: if to == NetworkStatus::Stopped {
                "stop"
            } else {
                "start"
            }
            .to_owned(),
            protect_secs: self.protect_period.as_secs(),
            cards: results,
            failed,
        })
    }
}
