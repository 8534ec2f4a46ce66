//! `PATCH /assets/{card|device}/{id}/polling-status`: flips the flag and applies the lifecycle
//! event to the card, or to every card of the device. Switching polling on also re-evaluates
//! the cards (a card that was not polled may have missed its stop or resume).

use crate::error::StoreResultExt;
use crate::{Admin, AdminError, Evaluation};
use domain::{CardId, DeviceId};
use serde::{Deserialize, Serialize};
use stop_resume::Trigger;

/// The kind of asset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AssetType {
    Card,
    Device,
}

/// The body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PollingStatusBody {
    pub enable_polling: bool,
}

/// What the switch did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PollingStatusReport {
    pub asset_type: AssetType,
    pub id: i64,
    pub enable_polling: bool,
    /// Cards the event was applied to.
    pub cards: usize,
    /// Cards now in the queues of their config.
    pub enqueued: usize,
    /// Cards taken out of every queue.
    pub removed: usize,
    pub evaluations: Vec<Evaluation>,
}

impl Admin {
    pub async fn set_polling_status(
        &self,
        asset_type: AssetType,
        id: i64,
        enable: bool,
    ) -> Result<PollingStatusReport, AdminError> {
        let mut report = PollingStatusReport {
            asset_type,
            id,
            enable_polling: enable,
            cards: 0,
            enqueued: 0,
            removed: 0,
            evaluations: Vec::new(),
        };
        let cards = match asset_type {
            AssetType::Card => {
                let card = CardId(id);
                self.card(card).await?;
                self.stores
                    .cards
                    .set_enable_polling(card, enable)
                    .await
                    .admin()?;
                if enable {
                    let out = self.lifecycle.on_card_enabled(card).await?;
                    report.enqueued = out.enqueued;
                } else {
                    self.lifecycle.on_card_disabled(card).await?;
                    report.removed = 1;
                }
                vec![card]
            }
            AssetType::Device => {
                let device = DeviceId(id);
                self.device(device).await?;
                self.stores
                    .devices
                    .set_enable_polling(device, enable)
                    .await
                    .admin()?;
                let out = self.lifecycle.on_device_polling_changed(device).await?;
                report.enqueued = out.enqueued;
                report.removed = if enable { 0 } else { out.removed };
                self.stores.cards.ids_of_devices(&[device]).await.admin()?
            }
        };
        report.cards = cards.len();
        if enable {
            for card in cards {
                report
                    .evaluations
                    .push(self.reevaluate(card, Trigger::AssetPollingControl).await);
            }
        }
        Ok(report)
    }
}
