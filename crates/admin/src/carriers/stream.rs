//! Carriers' push streams: 1NCE's and emnify's Data Streamer post usage records to
//! `POST /api/carriers/{carrier_id}/stream`, authenticated per carrier with HTTP Basic auth
//! (credential fields `stream_username` and `stream_password` of the carrier).
//!
//! A post is checked whole before anything is written (the route refuses a bad one and the
//! carrier resends it); its data usage records are then applied in one transaction
//! (`CarrierStreamStore::apply_streamed_usage`): each record once (`tb_carrier_event`), through
//! the usage write of the polls (month counters on the locked row, usage record, deduction).
//!
//! **Counting rule** (`domain::apply_streamed`, `domain::apply_month_total`): a pushed record
//! counts at once and is remembered as `streamed_ahead_mb` of its card's month; a poll counts
//! only the rise of the carrier's month total beyond what the stream already counted. So a
//! total that already includes a streamed session counts nothing for it, a total that lags
//! counts nothing twice when it catches up, and a record of a month already closed counts
//! nothing.
//!
//! After the write each changed card is treated as a usage poll treats it: the decision table
//! is asked (`stop_resume::table_asks_for_action`) and, when it asks for an action, the card
//! is evaluated under its lock (`Trigger::CarrierStream`); then its next usage poll is pushed
//! back to one carddata interval from now (`ZADD XX`: a card out of the queue stays out), so
//! that poll is the reconciliation with the carrier's total.

use crate::error::StoreResultExt;
use crate::{AdminError, Evaluation};
use chrono::{DateTime, Utc};
use domain::store::{CarrierStore, CarrierStreamStore};
use domain::{
    CarrierAccount, CarrierId, CarrierProtocol, Clock, Megabytes, StreamOutcome, StreamedUsage,
    TaskType,
};
use gateway::carriers::stream::StreamRecord;
use gateway::carriers::units::month_of;
use polling_config::PollingConfigManager;
use polling_queue::PollingQueueManager;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Arc;
use stop_resume::{StopResumeService, Trigger, table_asks_for_action};

/// What a post did, record by record counted by outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StreamReport {
    /// Records in the post.
    pub records: usize,
    /// Data usage records counted on their card.
    pub applied: usize,
    /// Records applied before (a replay) or twice in the post: nothing changed.
    pub duplicate: usize,
    /// Data usage records of an ICCID no live card of the carrier has: nothing written.
    pub unknown_card: usize,
    /// Data usage records of a month already closed on their card: kept, nothing counted.
    pub closed_month: usize,
    /// Records that are no data usage (SMS records, events): nothing written.
    pub ignored: usize,
    /// The ignored records by kind (`sms`, `event`, `traffic_type_<id>`).
    pub ignored_kinds: BTreeMap<String, usize>,
    /// Megabytes the post counted, over every card.
    pub counted_mb: Megabytes,
    /// Cards whose counters changed.
    pub cards: usize,
    /// The evaluations the decision table asked for (a card over its limit stopped, ...).
    pub evaluations: Vec<Evaluation>,
}

/// Why a post is not let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamRefusal {
    /// No such carrier, or its protocol has no push stream we take.
    NotFound(String),
    /// No credentials, wrong ones, or none configured for the carrier's stream.
    Unauthenticated(&'static str),
    /// The carrier is disabled: its posts are refused (the carrier resends them later).
    Disabled,
}

/// The push streams' service. Cheap to clone.
#[derive(Clone)]
pub struct StreamService {
    carriers: Arc<dyn CarrierStore>,
    streams: Arc<dyn CarrierStreamStore>,
    queue: PollingQueueManager,
    configs: PollingConfigManager,
    stop_resume: StopResumeService,
    clock: Arc<dyn Clock>,
    timezone: chrono_tz::Tz,
}

impl std::fmt::Debug for StreamService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamService").finish_non_exhaustive()
    }
}

/// What [`StreamService::new`] is built from.
pub struct StreamParts {
    pub carriers: Arc<dyn CarrierStore>,
    pub streams: Arc<dyn CarrierStreamStore>,
    pub queue: PollingQueueManager,
    pub configs: PollingConfigManager,
    pub stop_resume: StopResumeService,
    pub clock: Arc<dyn Clock>,
    /// `CMP_TIMEZONE`: the calendar a record's month is read in.
    pub timezone: chrono_tz::Tz,
}

impl StreamService {
    pub fn new(p: StreamParts) -> Self {
        Self {
            carriers: p.carriers,
            streams: p.streams,
            queue: p.queue,
            configs: p.configs,
            stop_resume: p.stop_resume,
            clock: p.clock,
            timezone: p.timezone,
        }
    }

    /// The carrier a post names, if it may post: it exists, its protocol has a push stream, the
    /// Basic auth `user`/`password` are its stream credentials (compared in constant time) and
    /// it is enabled. `Err(Ok(refusal))`: refused; `Err(Err(_))`: the store failed.
    pub async fn admit(
        &self,
        id: CarrierId,
        basic: Option<(&str, &str)>,
    ) -> Result<CarrierAccount, Result<StreamRefusal, AdminError>> {
        let account = self
            .carriers
            .get(id)
            .await
            .admin()
            .map_err(Err)?
            .ok_or_else(|| Ok(StreamRefusal::NotFound(format!("carrier {id}"))))?;
        if !account.protocol.has_push_stream() {
            return Err(Ok(StreamRefusal::NotFound(format!(
                "a push stream of carrier {id} ({} has none; streams: {})",
                account.protocol,
                streaming_protocols()
            ))));
        }
        let Some((user, password)) = basic else {
            return Err(Ok(StreamRefusal::Unauthenticated(
                "send the carrier's stream credentials as HTTP Basic auth",
            )));
        };
        let Some((want_user, want_password)) = account.credentials.stream_basic_auth() else {
            tracing::warn!(
                carrier_id = id.get(),
                "a push stream posted to a carrier without stream credentials; set stream_username and stream_password"
            );
            return Err(Ok(StreamRefusal::Unauthenticated(
                "the carrier has no stream credentials configured",
            )));
        };
        // Both checked whatever the first gives: the time taken tells nothing.
        let user_ok = same_secret(user, want_user.expose());
        let password_ok = same_secret(password, want_password.expose());
        if !(user_ok & password_ok) {
            metrics::counter!("cmp_carrier_stream_refused_total",
                "carrier" => id.get().to_string(), "why" => "unauthenticated")
            .increment(1);
            return Err(Ok(StreamRefusal::Unauthenticated(
                "wrong stream credentials",
            )));
        }
        if !account.enabled {
            metrics::counter!("cmp_carrier_stream_refused_total",
                "carrier" => id.get().to_string(), "why" => "disabled")
            .increment(1);
            return Err(Ok(StreamRefusal::Disabled));
        }
        Ok(account)
    }

    /// Applies a checked post of `carrier` (see the module doc).
    pub async fn apply(
        &self,
        carrier: &CarrierAccount,
        records: Vec<StreamRecord>,
    ) -> Result<StreamReport, AdminError> {
        let now = self.clock.now();
        let mut report = StreamReport {
            records: records.len(),
            ..StreamReport::default()
        };
        let mut usage = Vec::with_capacity(records.len());
        for record in records {
            match record {
                StreamRecord::DataUsage {
                    record_id,
                    iccid,
                    ended_at,
                    megabytes,
                } => usage.push(StreamedUsage {
                    month: self.month(ended_at),
                    record_id,
                    iccid,
                    ended_at,
                    megabytes,
                }),
                StreamRecord::Other { kind } => {
                    report.ignored += 1;
                    *report.ignored_kinds.entry(kind).or_default() += 1;
                }
            }
        }
        let written = self
            .streams
            .apply_streamed_usage(carrier.carrier_id, &usage, now)
            .await
            .admin()?;
        for outcome in &written.outcomes {
            match outcome {
                StreamOutcome::Applied => report.applied += 1,
                StreamOutcome::Duplicate => report.duplicate += 1,
                StreamOutcome::UnknownCard => report.unknown_card += 1,
                StreamOutcome::ClosedMonth => report.closed_month += 1,
                StreamOutcome::Ignored => report.ignored += 1,
            }
        }
        count_outcomes(carrier.carrier_id, &report);
        report.cards = written.cards.len();
        let mut push_back = Vec::with_capacity(written.cards.len());
        for changed in written.cards {
            report.counted_mb += changed.counted_mb;
            let mut card = changed.card;
            if table_asks_for_action(&card, &changed.valid_packages, self.clock.now()) {
                match self
                    .stop_resume
                    .evaluate(card.id, Trigger::CarrierStream)
                    .await
                {
                    // The stop/resume service aligned the card's queues with what it wrote.
                    Ok(evaluated) => {
                        report.evaluations.push(Evaluation::of(&evaluated.decision));
                        card = evaluated.card;
                    }
                    Err(e) => {
                        tracing::warn!(card_id = %card.id, error = %crate::Chain(&e),
                            "evaluation after a pushed usage record failed; the next poll decides");
                        report.evaluations.push(Evaluation::failed(card.id, &e));
                    }
                }
            }
            if let Some(interval) = self
                .configs
                .matched_interval(&card.match_fields(), TaskType::Carddata)
            {
                let next =
                    now + chrono::Duration::from_std(interval).unwrap_or(chrono::Duration::zero());
                push_back.push((card.id, next));
            }
        }
        // The usage is written: a failure here only leaves the poll at its old time.
        if let Err(e) = self
            .queue
            .reschedule_many(TaskType::Carddata, &push_back)
            .await
        {
            tracing::warn!(cards = push_back.len(), error = %e,
                "cannot push back the usage polls of cards a stream reported; they poll at their old time");
        }
        tracing::debug!(carrier_id = carrier.carrier_id.get(), records = report.records,
            applied = report.applied, duplicate = report.duplicate,
            unknown_card = report.unknown_card, counted_mb = %report.counted_mb,
            "push stream post applied");
        Ok(report)
    }

    /// The month of the deployment's calendar a session that ended at `at` belongs to.
    fn month(&self, at: DateTime<Utc>) -> chrono::NaiveDate {
        month_of(at, self.timezone)
    }
}

/// The protocols with a push stream, for messages.
fn streaming_protocols() -> String {
    CarrierProtocol::ALL
        .iter()
        .filter(|p| p.has_push_stream())
        .map(|p| p.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `cmp_carrier_stream_records_total{carrier, outcome}`: records by what became of them.
fn count_outcomes(carrier: CarrierId, r: &StreamReport) {
    let carrier = carrier.get().to_string();
    for (outcome, n) in [
        (StreamOutcome::Applied, r.applied),
        (StreamOutcome::Duplicate, r.duplicate),
        (StreamOutcome::UnknownCard, r.unknown_card),
        (StreamOutcome::ClosedMonth, r.closed_month),
        (StreamOutcome::Ignored, r.ignored),
    ] {
        if n > 0 {
            metrics::counter!("cmp_carrier_stream_records_total",
                "carrier" => carrier.clone(), "outcome" => outcome.as_str())
            .increment(n as u64);
        }
    }
}

/// Whether `given` is `wanted`, in time independent of where they differ and of their lengths
/// (both are hashed to 32 bytes first, then every byte is compared).
fn same_secret(given: &str, wanted: &str) -> bool {
    let (a, b) = (
        Sha256::digest(given.as_bytes()),
        Sha256::digest(wanted.as_bytes()),
    );
    let diff = a
        .iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal::Decimal;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("hunter2", "hunter2"));
        assert!(!same_secret("hunter2", "hunter3"));
        assert!(!same_secret("", "hunter2"));
        assert!(!same_secret("hunter2x", "hunter2"));
    }

    #[test]
    fn the_streaming_protocols() {
        assert_eq!(streaming_protocols(), "1nce, emnify");
        assert_eq!(Decimal::ZERO, StreamReport::default().counted_mb);
    }
}
