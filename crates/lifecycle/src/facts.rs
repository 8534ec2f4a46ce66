//! A fact config matching reads changed through polling or stop/resume (RULES.md,
//! "Lifecycle", second row; seed 000 "Worker 进程卡状态变化重新入队").
//!
//! Real-name and network status change through polling itself, with no lifecycle event. When
//! one changes, the card may match another config that schedules other task types: the card is
//! aligned at once — added, due now, to each type its new config schedules that it is not in;
//! removed from each type no longer scheduled. Entries it keeps keep their scores.

use crate::{LifecycleError, PollingLifecycleService};
use domain::Card;
use polling_queue::Aligned;

impl PollingLifecycleService {
    /// Aligns the card's queue membership with its matched config after a change of its
    /// real-name status, network status, category or carrier. A card whose own or device's
    /// polling switch is off (or that is deleted) is removed from every queue instead.
    pub async fn on_card_facts_changed(&self, card: &Card) -> Result<Aligned, LifecycleError> {
        let wanted = if self.polling_allowed(card).await? {
            self.configs
                .snapshot()
                .scheduled_types(&card.match_fields())
        } else {
            [false; 4]
        };
        let aligned = self
            .queue
            .align(&[(card.id, wanted)], self.clock.now())
            .await?;
        if aligned.changed() {
            tracing::debug!(
                card_id = card.id.get(),
                added = aligned.added,
                removed = aligned.removed,
                "卡状态变化重新入队: the card's queues follow its new matched config"
            );
        }
        Ok(aligned)
    }

    /// The card's switch, then its device's (one read, only for a bound, enabled card).
    async fn polling_allowed(&self, card: &Card) -> Result<bool, LifecycleError> {
        if card.deleted_at.is_some() || !card.enable_polling {
            return Ok(false);
        }
        let Some(device) = card.device_id else {
            return Ok(true);
        };
        let flags = self.devices.enable_polling_of(&[device]).await?;
        Ok(card.polling_allowed(flags.get(&device).copied()))
    }
}
