//! One stop or start carried out as a durable intent: a `pending` row before the carrier is
//! asked, the carrier's answer under a deadline, then the row closed and the card following
//! the carrier's yes in one transaction (`CardStore::append_state_if`, `close_intent`).

use crate::service::StopResumeService;
use crate::{StopResumeError, Trigger, metrics};
use domain::store::{IntentClose, StateWrite};
use domain::{Card, CardId, GatewayOutcome, NetworkStatus, NewCardStateLog, StopReason};
use tracing::{Instrument, error, warn};

/// How the card's new state is known after a decision was carried out.
#[expect(
    clippy::large_enum_variant,
    reason = "one short-lived value per stop or start"
)]
pub(crate) enum Written {
    /// As read under the lock, with the decision applied (the write was the decision's).
    AsDecided,
    /// As the store returned it from the write.
    Card(Card),
    /// Not known: a later write overtook this one.
    Overtaken,
}

impl StopResumeService {
    /// One stop or start: the intent (`pending`, compare-and-set on the card's state as read),
    /// the carrier call within `call_deadline`, then the row `ok` with the card in one
    /// transaction, or `failed` (the card unchanged). Killed anywhere in between, the row
    /// stays `pending` until the next evaluation after the stale bound makes it `interrupted`.
    pub(crate) async fn carry_out(
        &self,
        card: &Card,
        to: NetworkStatus,
        stop_reason: Option<StopReason>,
        trigger: Trigger,
    ) -> Result<Written, StopResumeError> {
        let entry = NewCardStateLog {
            card_id: card.id,
            from_status: card.facts.network_status,
            to_status: to,
            stop_reason,
            trigger: trigger.as_str().to_owned(),
            gateway_outcome: GatewayOutcome::Pending,
            trace_id: crate::trace::current_trace_id(),
        };
        let row = self.append(&entry, card.stop_reason).await?;
        let deadline = self.settings.call_deadline;
        let Ok(answer) = tokio::time::timeout(deadline, self.switch(card, to)).await else {
            // The call may have reached the carrier: the honest outcome is `interrupted`.
            self.close(card.id, row, GatewayOutcome::Interrupted).await;
            return Err(StopResumeError::CallCutOff {
                card_id: card.id,
                call: call_name(to),
                after: deadline,
            });
        };
        if let Err(e) = answer {
            self.close(card.id, row, GatewayOutcome::Failed).await;
            return Err(e);
        }
        match self.cards.close_intent(row, GatewayOutcome::Ok).await {
            Ok(closed) => {
                metrics::record_intent(GatewayOutcome::Ok, 1);
                Ok(match closed {
                    IntentClose::Followed(card) => Written::Card(card),
                    IntentClose::Closed => Written::Overtaken,
                    IntentClose::Unchanged => {
                        warn!(card_id = %card.id, row, "the intent was no longer pending when the carrier's yes was written");
                        Written::Overtaken
                    }
                })
            }
            Err(e) => {
                // The row stays `pending`; once stale it becomes `interrupted` and the next
                // evaluation, on the database's (old) facts, asks the carrier again, which is
                // idempotent: the database catches up then.
                error!(card_id = %card.id, to = ?to, row, error = %e,
                    "carrier applied the change but the database write failed");
                Err(StopResumeError::from(e))
            }
        }
    }

    /// Appends a state-log row if the card is still as read; a card changed or a call in
    /// flight (which the Redis card lock should have kept out: the database is the last guard)
    /// answers `Busy`, and the caller decides again later.
    pub(crate) async fn append(
        &self,
        entry: &NewCardStateLog,
        from_reason: Option<StopReason>,
    ) -> Result<i64, StopResumeError> {
        match self.cards.append_state_if(entry, from_reason).await? {
            StateWrite::Written(row) => Ok(row),
            StateWrite::Gone => Err(StopResumeError::CardNotFound(entry.card_id)),
            StateWrite::Changed => {
                warn!(card_id = %entry.card_id, "the card changed between its read and its write (card lock lost?): deciding again later");
                Err(StopResumeError::Busy(entry.card_id))
            }
            StateWrite::InFlight => {
                warn!(card_id = %entry.card_id, "another stop/start of the card is in flight (card lock lost?): deciding again later");
                Err(StopResumeError::Busy(entry.card_id))
            }
        }
    }

    /// Writes a refusal or an interruption; a write that fails leaves the row `pending`, which
    /// the stale bound settles.
    async fn close(&self, card_id: CardId, row: i64, outcome: GatewayOutcome) {
        metrics::record_intent(outcome, 1);
        if let Err(e) = self.cards.close_intent(row, outcome).await {
            warn!(card_id = %card_id, row, outcome = %outcome, error = %e,
                "cannot write the intent's outcome; it stays pending until the stale bound");
        }
    }

    /// Asks the carrier to move the card to `to` (the client retries: 3 tries).
    async fn switch(&self, card: &Card, to: NetworkStatus) -> Result<(), StopResumeError> {
        let call = call_name(to);
        let span = tracing::info_span!("carrier_call", call, card_id = %card.id,
            carrier_id = %card.facts.carrier_id, outcome = tracing::field::Empty);
        let answer = async {
            match to {
                NetworkStatus::Stopped => {
                    self.gateway
                        .stop(card.facts.carrier_id, &card.facts.iccid)
                        .await
                }
                NetworkStatus::Online => {
                    self.gateway
                        .start(card.facts.carrier_id, &card.facts.iccid)
                        .await
                }
            }
        }
        .instrument(span.clone())
        .await;
        span.record("outcome", if answer.is_ok() { "ok" } else { "failed" });
        let outcome = match answer {
            Ok(got) if got == to => Ok(()),
            Ok(got) => Err(StopResumeError::UnexpectedStatus {
                card_id: card.id,
                call,
                got,
            }),
            Err(source) => Err(StopResumeError::Gateway {
                card_id: card.id,
                call,
                source,
            }),
        };
        if let Err(e) = &outcome {
            warn!(card_id = %card.id, call, error = %e, cause = ?std::error::Error::source(e),
                "gateway refused; card left unchanged");
        }
        outcome
    }
}

fn call_name(to: NetworkStatus) -> &'static str {
    match to {
        NetworkStatus::Stopped => "stop",
        NetworkStatus::Online => "start",
    }
}
