//! Cards: create one, get, list with the operators' filters, delete, platform status, operator
//! stop/start (`manual`), state log. Bulk import is in `import.rs`.

use crate::error::{Checks, StoreResultExt};
use crate::{Admin, AdminError, Evaluation};
use domain::store::{Page, Paged};
use domain::{
    Card, CardCategory, CardId, CardQuery, CardStateLog, CarrierId, DeviceId, NetworkStatus,
    NewCard, RealNameStatus,
};
use serde::{Deserialize, Serialize};

/// A card to create (one, or a row of an import).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardBody {
    /// An ICCID: 18 to 22 letters or digits starting with `89`; unique among live cards.
    pub iccid: String,
    /// An optional `+` and 1 to 20 digits.
    #[serde(default)]
    pub msisdn: Option<String>,
    pub carrier_id: i64,
    #[serde(default = "normal")]
    pub card_category: CardCategory,
    /// The platform's status code of the card's business lifecycle.
    #[serde(default = "one")]
    pub status: i16,
    #[serde(default = "not_verified")]
    pub real_name_status: RealNameStatus,
    #[serde(default = "online")]
    pub network_status: NetworkStatus,
    #[serde(default = "yes")]
    pub enable_polling: bool,
    /// The device the card is bound to; `null`: a standalone card.
    #[serde(default)]
    pub device_id: Option<i64>,
}

fn normal() -> CardCategory {
    CardCategory::Normal
}
fn one() -> i16 {
    1
}
fn not_verified() -> RealNameStatus {
    RealNameStatus::NotVerified
}
fn online() -> NetworkStatus {
    NetworkStatus::Online
}
fn yes() -> bool {
    true
}

/// An ICCID (ITU-T E.118): 18 to 22 characters starting with the telecom prefix `89`; letters
/// are accepted after it (some carriers' issuer parts carry them).
pub fn iccid_problem(iccid: &str) -> Option<&'static str> {
    let ok = (18..=22).contains(&iccid.len())
        && iccid.starts_with("89")
        && iccid.bytes().all(|b| b.is_ascii_alphanumeric());
    (!ok).then_some("must be an ICCID: 18 to 22 letters or digits starting with 89")
}

/// The ICCID prefix of a search: 1 to 22 letters or digits.
pub fn iccid_prefix_problem(prefix: &str) -> Option<&'static str> {
    let ok = (1..=22).contains(&prefix.len()) && prefix.bytes().all(|b| b.is_ascii_alphanumeric());
    (!ok).then_some("must be 1 to 22 letters or digits")
}

/// An MSISDN: an optional `+`, then 1 to 20 digits.
pub fn msisdn_problem(msisdn: &str) -> Option<&'static str> {
    let digits = msisdn.strip_prefix('+').unwrap_or(msisdn);
    let ok = (1..=20).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit());
    (!ok).then_some("must be an optional + and 1 to 20 digits")
}

impl CardBody {
    /// Field checks that need no I/O; pointers start with `prefix` (`""` or `/cards/3`).
    pub(crate) fn check(&self, prefix: &str, checks: &mut Checks) -> NewCard {
        let iccid = self.iccid.trim();
        if let Some(problem) = iccid_problem(iccid) {
            checks.fail(format!("{prefix}/iccid"), problem);
        }
        if let Some(problem) = self
            .msisdn
            .as_deref()
            .and_then(|m| msisdn_problem(m.trim()))
        {
            checks.fail(format!("{prefix}/msisdn"), format!("{problem}, or null"));
        }
        if self.carrier_id <= 0 {
            checks.fail(
                format!("{prefix}/carrier_id"),
                "must be a positive carrier id",
            );
        }
        if let Some(d) = self.device_id
            && d <= 0
        {
            checks.fail(
                format!("{prefix}/device_id"),
                "must be a positive device id, or null",
            );
        }
        NewCard {
            iccid: iccid.to_owned(),
            msisdn: self.msisdn.as_ref().map(|m| m.trim().to_owned()),
            carrier_id: CarrierId(self.carrier_id),
            card_category: self.card_category,
            status: self.status,
            real_name_status: self.real_name_status,
            network_status: self.network_status,
            enable_polling: self.enable_polling,
            device_id: self.device_id.map(DeviceId),
        }
    }
}

/// `PATCH /cards/{id}/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CardStatusBody {
    /// The platform's status code.
    pub status: i16,
}

/// A card and what an operator action did to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CardAction {
    pub card: Card,
    pub evaluation: Evaluation,
}

impl From<stop_resume::Evaluated> for CardAction {
    fn from(done: stop_resume::Evaluated) -> Self {
        CardAction {
            evaluation: Evaluation::of(&done.decision),
            card: done.card,
        }
    }
}

impl Admin {
    /// The live card, or 404.
    pub(crate) async fn card(&self, id: CardId) -> Result<Card, AdminError> {
        self.stores
            .cards
            .get(id)
            .await
            .admin()?
            .ok_or_else(|| AdminError::NotFound(format!("card {id}")))
    }

    pub async fn get_card(&self, id: CardId) -> Result<Card, AdminError> {
        self.card(id).await
    }

    pub async fn list_cards(
        &self,
        query: &CardQuery,
        page: Page,
    ) -> Result<Paged<Card>, AdminError> {
        self.stores.card_admin.search(query, page).await.admin()
    }

    pub async fn create_card(&self, body: &CardBody) -> Result<Card, AdminError> {
        let mut checks = Checks::default();
        let new = body.check("", &mut checks);
        checks.finish()?;
        if let Some(device) = new.device_id {
            self.device_exists(device, "/device_id").await?;
        }
        if !self
            .stores
            .card_admin
            .existing_iccids(std::slice::from_ref(&new.iccid))
            .await
            .admin()?
            .is_empty()
        {
            return Err(AdminError::Conflict {
                field: "iccid".into(),
            });
        }
        let card = self.stores.cards.insert(&new).await.admin()?;
        self.lifecycle.on_card_created(card.id).await?;
        Ok(card)
    }

    /// 422 naming `pointer` when the device is not a live device.
    pub(crate) async fn device_exists(
        &self,
        device: DeviceId,
        pointer: &str,
    ) -> Result<(), AdminError> {
        match self.stores.devices.get(device).await.admin()? {
            Some(_) => Ok(()),
            None => Err(AdminError::invalid(
                pointer,
                format!("device {device} does not exist"),
            )),
        }
    }

    /// Soft-deletes the card; out of every queue, every manual list and the card cache.
    pub async fn delete_card(&self, id: CardId) -> Result<(), AdminError> {
        if !self.stores.cards.soft_delete(id).await.admin()? {
            return Err(AdminError::NotFound(format!("card {id}")));
        }
        self.lifecycle.on_card_deleted(id).await?;
        self.queue.remove_from_manual_lists(id).await?;
        Ok(())
    }

    pub async fn set_card_status(&self, id: CardId, status: i16) -> Result<Card, AdminError> {
        self.card(id).await?;
        let card = self.stores.cards.set_status(id, status).await.admin()?;
        self.lifecycle.on_card_status_changed(id).await?;
        Ok(card)
    }

    /// The operator's stop: `stop_reason = manual`, never lifted by automation. The stop/resume
    /// service reads the card once under its lock, aligns its queues once and returns the card
    /// it wrote: nothing is read again here.
    pub async fn stop_card(&self, id: CardId) -> Result<CardAction, AdminError> {
        Ok(self.stop_resume.stop_by_operator(id).await?.into())
    }

    /// The operator's start, whatever the reason the card was stopped for.
    pub async fn start_card(&self, id: CardId) -> Result<CardAction, AdminError> {
        Ok(self.stop_resume.start_by_operator(id).await?.into())
    }

    pub async fn card_state_log(
        &self,
        id: CardId,
        page: Page,
    ) -> Result<Paged<CardStateLog>, AdminError> {
        self.card(id).await?;
        self.stores.cards.state_log(id, page).await.admin()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_checks_point_into_the_row() {
        let row = CardBody {
            iccid: "89 86".into(),
            msisdn: Some(String::new()),
            carrier_id: -1,
            card_category: CardCategory::Normal,
            status: 1,
            real_name_status: RealNameStatus::Verified,
            network_status: NetworkStatus::Online,
            enable_polling: true,
            device_id: Some(0),
        };
        let mut checks = Checks::default();
        row.check("/cards/3", &mut checks);
        match checks.finish() {
            Err(AdminError::Invalid(errors)) => {
                let pointers: Vec<&str> = errors.iter().map(|e| e.pointer.as_str()).collect();
                assert_eq!(
                    pointers,
                    [
                        "/cards/3/iccid",
                        "/cards/3/msisdn",
                        "/cards/3/carrier_id",
                        "/cards/3/device_id"
                    ]
                );
            }
            other => panic!("expected Invalid, got {other:?}"),
        }
    }
}
