//! One stop or start carried out as a durable intent: a `pending` row before the carrier is
//! asked, the carrier's answer under a deadline, then the row closed and the card following
//! the carrier's yes in one transaction (`CardStore::append_state_if`, `close_intent`).

use crate::service::StopResumeService;
use crate::{StopResumeError, Trigger, metrics};
use chrono::{DateTime, Utc};
use domain::store::{IntentClose, Page, StateWrite};
use domain::{Card, CardId, GatewayOutcome, NetworkStatus, NewCardStateLog, StopReason};
use gateway::GatewayError;
use tracing::{Instrument, debug, error, info, warn};

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
    /// A refusal not understood is followed by a status read (the card already as wanted: `ok`,
    /// noted `already_at_carrier`); such refusals in a row back the change off (`BackedOff`,
    /// before the intent is written, operators excepted).
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
        let call = call_name(to);
        let streak = if trigger == Trigger::Operator {
            // An operator asks on purpose: never held back.
            Streak::default()
        } else {
            self.refusal_streak(card.id, to).await?
        };
        if let Some(retry_in) = streak.backoff_left() {
            debug!(card_id = %card.id, call, refusals = streak.refusals, ?retry_in,
                "the carrier kept refusing this change; not asked before the back-off ends");
            return Err(StopResumeError::BackedOff {
                card_id: card.id,
                call,
                refusals: streak.refusals,
                retry_in,
            });
        }
        let row = self.append(&entry, card.stop_reason).await?;
        let deadline = self.settings.call_deadline;
        let Ok(answer) = tokio::time::timeout(deadline, self.switch(card, to)).await else {
            // The call may have reached the carrier: the honest outcome is `interrupted`.
            self.close(card.id, row, GatewayOutcome::Interrupted).await;
            return Err(StopResumeError::CallCutOff {
                card_id: card.id,
                call,
                after: deadline,
            });
        };
        let Err(e) = answer else {
            return self.close_ok(card, to, row, "").await;
        };
        if !refusal_not_understood(&e) {
            self.close(card.id, row, GatewayOutcome::Failed).await;
            return Err(e);
        }
        // A refusal the adapter did not understand: the carrier's own word on the card's status
        // says whether the change is already made (a platform refusing a card already in the
        // wanted status with a code nobody documented).
        match self.read_status(card).await {
            Some(status) if status == to => {
                info!(card_id = %card.id, call, refusal = %e,
                    "the carrier refused the change but already has the card as wanted: recorded as made");
                return self.close_ok(card, to, row, NOTE_ALREADY).await;
            }
            // Two statuses: the one read is the card's as the database has it, so the database
            // already agrees with what was read.
            Some(status) => debug!(card_id = %card.id, call, status = ?status,
                "the carrier refused the change and has the card as the database has it"),
            None => {}
        }
        self.close_noted(card.id, row, GatewayOutcome::Failed, NOTE_REFUSED)
            .await;
        let refusals = streak.refusals + 1;
        if trigger != Trigger::Operator && refusals >= REFUSALS_BEFORE_BACKOFF {
            warn!(card_id = %card.id, call, refusals, backoff = ?REFUSAL_BACKOFF, refusal = %e,
                "the carrier keeps refusing this change with answers not understood; backed off");
            return Err(StopResumeError::BackedOff {
                card_id: card.id,
                call,
                refusals,
                retry_in: REFUSAL_BACKOFF,
            });
        }
        Err(e)
    }

    /// Closes the intent `ok` (the carrier said yes, or a status read showed the change made:
    /// `note`), the card following it in the same transaction.
    async fn close_ok(
        &self,
        card: &Card,
        to: NetworkStatus,
        row: i64,
        note: &'static str,
    ) -> Result<Written, StopResumeError> {
        let closed = if note.is_empty() {
            self.cards.close_intent(row, GatewayOutcome::Ok).await
        } else {
            self.cards
                .close_intent_noted(row, GatewayOutcome::Ok, note)
                .await
        };
        match closed {
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

    /// The card's network status as the carrier has it, within the call deadline; `None`: the
    /// protocol has no such query, or the read failed (logged).
    async fn read_status(&self, card: &Card) -> Option<NetworkStatus> {
        let read = self
            .gateway
            .network_status(card.facts.carrier_id, &card.facts.iccid);
        match tokio::time::timeout(self.settings.call_deadline, read).await {
            Ok(Ok(status)) => Some(status),
            Ok(Err(e)) => {
                debug!(card_id = %card.id, error = %e, "cannot read the card's status after a refusal");
                None
            }
            Err(_) => {
                debug!(card_id = %card.id, "the status read after a refusal went unanswered");
                None
            }
        }
    }

    /// The card's latest changes to `to` refused with answers not understood, in a row (its
    /// newest state-log rows, `failed` and noted `refused`).
    async fn refusal_streak(
        &self,
        card_id: CardId,
        to: NetworkStatus,
    ) -> Result<Streak, StopResumeError> {
        let page = u32::try_from(REFUSALS_BEFORE_BACKOFF).unwrap_or(u32::MAX);
        let rows = self.cards.state_log(card_id, Page::new(1, page)).await?;
        let mut streak = Streak::default();
        for row in &rows.items {
            let refused = row.entry.gateway_outcome == GatewayOutcome::Failed
                && row.entry.to_status == to
                && row.entry.trigger.ends_with(&format!(":{NOTE_REFUSED}"));
            if !refused {
                break;
            }
            streak.refusals += 1;
            streak.latest = streak.latest.max(Some(row.created_at));
        }
        Ok(streak)
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
        self.close_noted(card_id, row, outcome, "").await;
    }

    /// [`close`](Self::close) with a note in the row's trigger (none when empty).
    async fn close_noted(
        &self,
        card_id: CardId,
        row: i64,
        outcome: GatewayOutcome,
        note: &'static str,
    ) {
        metrics::record_intent(outcome, 1);
        let closed = if note.is_empty() {
            self.cards.close_intent(row, outcome).await
        } else {
            self.cards.close_intent_noted(row, outcome, note).await
        };
        if let Err(e) = closed {
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

/// Refusals not understood of one change of a card, in a row, after which it is not asked
/// again before [`REFUSAL_BACKOFF`] has passed since the last (operators are never held back).
pub const REFUSALS_BEFORE_BACKOFF: usize = 3;

/// How long a change refused [`REFUSALS_BEFORE_BACKOFF`] times in a row waits before it is
/// asked again (then once per back-off while the refusals go on).
pub const REFUSAL_BACKOFF: std::time::Duration = std::time::Duration::from_secs(3600);

/// The note of an intent closed `ok` because a status read after a refusal showed the card
/// already as wanted.
const NOTE_ALREADY: &str = "already_at_carrier";

/// The note of an intent closed `failed` after a refusal not understood.
const NOTE_REFUSED: &str = "refused";

/// The card's refused changes in a row ([`StopResumeService::refusal_streak`]).
#[derive(Debug, Default, Clone, Copy)]
struct Streak {
    refusals: usize,
    latest: Option<DateTime<Utc>>,
}

impl Streak {
    /// What is left of the back-off of these refusals; `None`: not backed off. The rows'
    /// times are the database's, so they are compared with the wall clock (not the service's
    /// clock, which tests move): a skew of seconds does not matter to an hour.
    fn backoff_left(self) -> Option<std::time::Duration> {
        if self.refusals < REFUSALS_BEFORE_BACKOFF {
            return None;
        }
        let backoff = chrono::Duration::from_std(REFUSAL_BACKOFF).ok()?;
        let left = (self.latest? + backoff - Utc::now()).to_std().ok()?;
        (!left.is_zero()).then_some(left)
    }
}

/// Whether a stop or start failed with a refusal the adapter did not understand, which a status
/// read can settle: an answer not understood (`Unintelligible`, `Decode`), a carrier refusal
/// that is not retryable (`Carrier` below 500), or the other status than asked. Not after
/// timeouts, transport failures, throttling or 5xx: the carrier is struggling, a read would
/// add load to the incident, and the next attempt (idempotent on every platform we know) learns
/// the truth; nor after a change lock, a card unknown, credentials refused or a carrier
/// disabled, whose meaning is known.
fn refusal_not_understood(e: &StopResumeError) -> bool {
    match e {
        StopResumeError::UnexpectedStatus { .. } => true,
        StopResumeError::Gateway { source, .. } => match source {
            GatewayError::Unintelligible { .. } | GatewayError::Decode(_) => true,
            GatewayError::Carrier { status, .. } => *status < 500,
            _ => false,
        },
        _ => false,
    }
}

fn call_name(to: NetworkStatus) -> &'static str {
    match to {
        NetworkStatus::Stopped => "stop",
        NetworkStatus::Online => "start",
    }
}
