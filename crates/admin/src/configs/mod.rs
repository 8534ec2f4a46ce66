//! Polling configs: CRUD, status, and "which config does this card match, and why".
//!
//! Every write goes to the database first, then reloads this process's copy and publishes
//! `polling:configs:changed`, which every other process (the workers' reconciliation included)
//! reacts to within a second.

pub(crate) mod dry_run;

use crate::error::{Checks, StoreResultExt};
use crate::{Admin, AdminError};
use domain::store::{Page, Paged};
use domain::{
    CardCategory, CardCondition, CardId, CardMatchFields, CarrierId, Intervals, PollingConfig,
    PollingConfigId, PollingConfigInput,
};
use serde::{Deserialize, Serialize};

/// The longest interval a config may set: one year.
pub const MAX_INTERVAL_SECS: u32 = 366 * 24 * 3600;

/// A polling config to create, or the new content of one (`PUT` replaces every field).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigBody {
    pub name: String,
    /// Lower is tried first; ties broken by id.
    #[serde(default)]
    pub priority: i32,
    #[serde(default = "yes")]
    pub enabled: bool,
    /// `null`: any card state.
    #[serde(default)]
    pub card_condition: Option<CardCondition>,
    #[serde(default)]
    pub card_category: Option<CardCategory>,
    #[serde(default)]
    pub carrier_id: Option<i64>,
    /// Seconds between two real-name polls; `null`: not scheduled.
    #[serde(default)]
    pub realname_interval_secs: Option<u32>,
    #[serde(default)]
    pub carddata_interval_secs: Option<u32>,
    #[serde(default)]
    pub package_interval_secs: Option<u32>,
    #[serde(default)]
    pub protect_interval_secs: Option<u32>,
}

fn yes() -> bool {
    true
}

impl ConfigBody {
    /// Checks every field and converts.
    pub fn validate(&self) -> Result<PollingConfigInput, AdminError> {
        let mut checks = Checks::default();
        checks.text(&self.name, "/name", 128);
        for (pointer, v) in [
            ("/realname_interval_secs", self.realname_interval_secs),
            ("/carddata_interval_secs", self.carddata_interval_secs),
            ("/package_interval_secs", self.package_interval_secs),
            ("/protect_interval_secs", self.protect_interval_secs),
        ] {
            if let Some(secs) = v {
                checks.check(
                    (1..=MAX_INTERVAL_SECS).contains(&secs),
                    pointer,
                    "must be between 1 and 31622400 seconds, or null",
                );
            }
        }
        if let Some(c) = self.carrier_id {
            checks.check(c > 0, "/carrier_id", "must be a positive carrier id");
        }
        checks.finish()?;
        Ok(PollingConfigInput {
            name: self.name.trim().to_owned(),
            priority: self.priority,
            enabled: self.enabled,
            card_condition: self.card_condition,
            card_category: self.card_category,
            carrier_id: self.carrier_id.map(CarrierId),
            intervals: Intervals {
                realname_interval_secs: self.realname_interval_secs,
                carddata_interval_secs: self.carddata_interval_secs,
                package_interval_secs: self.package_interval_secs,
                protect_interval_secs: self.protect_interval_secs,
            },
        })
    }
}

/// One condition of a config, checked against a card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConditionCheck {
    /// `card_condition`, `card_category` or `carrier_id`.
    pub field: String,
    /// What the config requires.
    pub required: String,
    /// What the card has.
    pub actual: String,
    pub holds: bool,
}

/// How one config fared against the card, in matching order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigCandidate {
    pub id: PollingConfigId,
    pub name: String,
    pub priority: i32,
    pub enabled: bool,
    /// Every set condition holds (a disabled config is never chosen, whatever this says).
    pub matches: bool,
    pub conditions: Vec<ConditionCheck>,
}

/// `GET /polling-configs/match?card_id=`: the config a card matches, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigMatch {
    pub card_id: CardId,
    /// The fields matching reads.
    pub card: CardMatchFields,
    /// `null`: no enabled config matches; the card is not polled.
    pub matched: Option<PollingConfig>,
    /// Every config in matching order (ascending priority, then id), enabled or not.
    pub candidates: Vec<ConfigCandidate>,
    /// One sentence.
    pub reason: String,
}

/// Checks each set condition of `config` against `card`.
pub(crate) fn conditions(config: &PollingConfig, card: &CardMatchFields) -> Vec<ConditionCheck> {
    let mut out = Vec::new();
    if let Some(c) = config.spec.card_condition {
        let actual = format!(
            "real_name_status={}, network_status={}",
            i16::from(card.real_name_status),
            i16::from(card.network_status)
        );
        out.push(ConditionCheck {
            field: "card_condition".into(),
            required: c.as_str().into(),
            actual,
            holds: c.holds(card),
        });
    }
    if let Some(c) = config.spec.card_category {
        out.push(ConditionCheck {
            field: "card_category".into(),
            required: c.as_str().into(),
            actual: card.card_category.as_str().into(),
            holds: c == card.card_category,
        });
    }
    if let Some(c) = config.spec.carrier_id {
        out.push(ConditionCheck {
            field: "carrier_id".into(),
            required: c.to_string(),
            actual: card.carrier_id.to_string(),
            holds: c == card.carrier_id,
        });
    }
    out
}

/// Every config in matching order, enabled or not.
pub(crate) fn ordered(mut configs: Vec<PollingConfig>) -> Vec<PollingConfig> {
    configs.sort_by_key(|c| (c.spec.priority, c.id));
    configs
}

impl Admin {
    pub async fn list_configs(&self, page: Page) -> Result<Paged<PollingConfig>, AdminError> {
        let all = ordered(self.stores.configs.list_all().await.admin()?);
        let total = all.len() as u64;
        let start = usize::try_from(page.offset()).unwrap_or(usize::MAX);
        let items = all
            .into_iter()
            .skip(start)
            .take(page.page_size as usize)
            .collect();
        Ok(Paged {
            items,
            total,
            page: page.page,
            page_size: page.page_size,
        })
    }

    pub async fn get_config(&self, id: PollingConfigId) -> Result<PollingConfig, AdminError> {
        self.stores
            .configs
            .get(id)
            .await
            .admin()?
            .ok_or_else(|| AdminError::NotFound(format!("polling config {id}")))
    }

    pub async fn create_config(&self, body: &ConfigBody) -> Result<PollingConfig, AdminError> {
        let input = body.validate()?;
        let created = self.stores.configs.insert(&input).await.admin()?;
        self.configs_changed().await;
        Ok(created)
    }

    pub async fn update_config(
        &self,
        id: PollingConfigId,
        body: &ConfigBody,
    ) -> Result<PollingConfig, AdminError> {
        let input = body.validate()?;
        self.get_config(id).await?;
        let updated = self.stores.configs.update(id, &input).await.admin()?;
        self.configs_changed().await;
        Ok(updated)
    }

    pub async fn delete_config(&self, id: PollingConfigId) -> Result<(), AdminError> {
        if !self.stores.configs.delete(id).await.admin()? {
            return Err(AdminError::NotFound(format!("polling config {id}")));
        }
        self.configs_changed().await;
        Ok(())
    }

    pub async fn set_config_enabled(
        &self,
        id: PollingConfigId,
        enabled: bool,
    ) -> Result<PollingConfig, AdminError> {
        self.get_config(id).await?;
        let updated = self.stores.configs.set_enabled(id, enabled).await.admin()?;
        self.configs_changed().await;
        Ok(updated)
    }

    /// Reload here, then tell every process. The database write already happened: a Redis
    /// failure is logged, and the 5-minute refresh catches up.
    async fn configs_changed(&self) {
        if let Err(e) = self.configs.refresh().await {
            tracing::warn!(error = %e, "polling configs: local reload after a write failed");
        }
        if let Err(e) = self.configs.publish_changed().await {
            tracing::error!(error = %e, "polling configs: cannot publish the change; other processes see it at their next refresh");
        }
    }

    /// Which config the card matches, with every candidate's conditions.
    pub async fn match_card(&self, card_id: CardId) -> Result<ConfigMatch, AdminError> {
        let card = self.card(card_id).await?.match_fields();
        let all = ordered(self.stores.configs.list_all().await.admin()?);
        let mut matched = None;
        let mut candidates = Vec::with_capacity(all.len());
        for config in &all {
            let conditions = conditions(config, &card);
            let matches = conditions.iter().all(|c| c.holds);
            if matches && config.spec.enabled && matched.is_none() {
                matched = Some(config.clone());
            }
            candidates.push(ConfigCandidate {
                id: config.id,
                name: config.spec.name.clone(),
                priority: config.spec.priority,
                enabled: config.spec.enabled,
                matches,
                conditions,
            });
        }
        let reason = match &matched {
            Some(c) => format!(
                "matches config {} \"{}\" (priority {}): the first enabled config whose every set condition holds",
                c.id, c.spec.name, c.spec.priority
            ),
            None => "no enabled config matches: the card is not polled".to_owned(),
        };
        Ok(ConfigMatch {
            card_id,
            card,
            matched,
            candidates,
            reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::{CardMatchFields, NetworkStatus, RealNameStatus};

    fn body() -> ConfigBody {
        ConfigBody {
            name: " online ".into(),
            priority: 1,
            enabled: true,
            card_condition: Some(CardCondition::Online),
            card_category: None,
            carrier_id: Some(7),
            realname_interval_secs: None,
            carddata_interval_secs: Some(60),
            package_interval_secs: None,
            protect_interval_secs: None,
        }
    }

    #[test]
    fn validation_names_every_bad_field_and_trims() {
        let ok = body().validate().ok();
        assert_eq!(ok.as_ref().map(|i| i.name.as_str()), Some("online"));
        let mut bad = body();
        bad.name = "  ".into();
        bad.carddata_interval_secs = Some(0);
        bad.protect_interval_secs = Some(MAX_INTERVAL_SECS + 1);
        bad.carrier_id = Some(0);
        match bad.validate() {
            Err(AdminError::Invalid(errors)) => {
                let pointers: Vec<&str> = errors.iter().map(|e| e.pointer.as_str()).collect();
                assert_eq!(
                    pointers,
                    [
                        "/name",
                        "/carddata_interval_secs",
                        "/protect_interval_secs",
                        "/carrier_id"
                    ]
                );
            }
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn conditions_say_which_holds() {
        let input = body().validate().ok();
        let Some(input) = input else {
            panic!("valid body refused")
        };
        let config = PollingConfig {
            id: PollingConfigId(1),
            spec: PollingConfigInput {
                name: input.name,
                priority: input.priority,
                enabled: true,
                card_condition: input.card_condition,
                card_category: Some(CardCategory::Industry),
                carrier_id: input.carrier_id,
                intervals: input.intervals,
            },
            created_at: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
            updated_at: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
        };
        let card = CardMatchFields {
            id: CardId(1),
            carrier_id: CarrierId(7),
            card_category: CardCategory::Normal,
            real_name_status: RealNameStatus::Verified,
            network_status: NetworkStatus::Online,
        };
        let checks = conditions(&config, &card);
        let holds: Vec<(&str, bool)> = checks.iter().map(|c| (c.field.as_str(), c.holds)).collect();
        assert_eq!(
            holds,
            [
                ("card_condition", true),
                ("card_category", false),
                ("carrier_id", true)
            ]
        );
        assert_eq!(checks[1].actual, "normal");
    }
}
