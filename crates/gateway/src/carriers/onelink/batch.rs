//! The batch calls: the queries on `.../batch` (`iccids=a_b_c`, *assumed*: off unless the
//! carrier's `assumed_calls` turns them on, and served by the documented single-card calls
//! otherwise), and the documented batch status change, a job whose result is read with
//! `query/sim-batch-result`.

use super::OneLink;
use super::wire::{code, text};
use crate::{AnswerFault, GatewayError};
use domain::{AssumedCall, NetworkStatus};
use futures::future::join_all;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::PoisonError;

/// A batch status change the platform accepted: its job and what it asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BatchChange {
    pub(crate) job_id: String,
    pub(crate) iccids: Vec<String>,
    pub(crate) target: NetworkStatus,
}

/// Where a batch status change stands (`query/sim-batch-result`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BatchChangeState {
    /// `jobStatus` `0` (waiting) or `1` (in progress): ask again later.
    Pending,
    /// `jobStatus` `2` or `3`: per card, in the order of [`BatchChange::iccids`], the status
    /// after the change, or why it failed (a card the result does not name is
    /// [`GatewayError::MissingFromBatch`]).
    Done(Vec<Result<NetworkStatus, GatewayError>>),
}

/// A batch query no public source shows (`docs/carriers/onelink.md`, section 2): its
/// capability in the carrier's `assumed_calls`, its call label and its path.
pub(super) struct AssumedQuery {
    pub(super) capability: AssumedCall,
    pub(super) call: &'static str,
    pub(super) path: &'static str,
}

pub(super) const REALNAME_BATCH: AssumedQuery = AssumedQuery {
    capability: AssumedCall::RealnameBatch,
    call: "realname",
    path: "/query/sim-real-name-status/batch",
};

pub(super) const USAGE_BATCH: AssumedQuery = AssumedQuery {
    capability: AssumedCall::UsageBatch,
    call: "usage",
    path: "/query/sim-data-usage/batch",
};

pub(super) const STATUS_BATCH: AssumedQuery = AssumedQuery {
    capability: AssumedCall::NetworkStatusBatch,
    call: "network_status",
    path: "/query/sim-status/batch",
};

/// Whether the answer says the path does not exist: HTTP 404 or 405 (the platform's own
/// refusals are HTTP 200 with a status code).
fn interface_missing(e: &GatewayError) -> bool {
    matches!(
        e,
        GatewayError::Carrier {
            status: 404 | 405,
            ..
        }
    )
}

/// How the items of a batch answer name their card.
struct Naming {
    /// The field holding the ICCID.
    field: &'static str,
    /// The answer, as the fault of an item naming a card not asked calls it.
    answer: &'static str,
    /// Whether an item naming no card is counted as a fault (else it is passed over quietly).
    report_unnamed: bool,
}

/// The batch queries' items: `iccid`.
const BY_ICCID: Naming = Naming {
    field: "iccid",
    answer: "the batch answer",
    report_unnamed: true,
};

/// The batch job's results: `resultId` (`resultType` `2`).
const BY_RESULT_ID: Naming = Naming {
    field: "resultId",
    answer: "the result",
    report_unnamed: false,
};

impl OneLink {
    /// Per card of `asked`, in its order, the outcome of the first item naming it. An item naming
    /// no card or a card not asked is ignored (counted as a fault, see [`Naming`]); a card no
    /// item names is `MissingFromBatch`. An item whose `status` is a refusal is that refusal's
    /// error; else `outcome` reads it (with the card it names and whether it has a `status`).
    fn collate<T: Clone>(
        &self,
        call: &str,
        asked: &[String],
        items: &[Value],
        naming: &Naming,
        outcome: impl Fn(&Value, &str, bool) -> Result<T, GatewayError>,
    ) -> Vec<Result<T, GatewayError>> {
        let asked_set: HashSet<&str> = asked.iter().map(String::as_str).collect();
        let mut found: HashMap<&str, Result<T, GatewayError>> = HashMap::new();
        for item in items {
            let Some(named) = item
                .get(naming.field)
                .and_then(Value::as_str)
                .map(str::trim)
            else {
                if naming.report_unnamed {
                    let _ = self.http.fault(
                        AnswerFault::MissingField,
                        format!("{call}: a batch item without `{}`", naming.field),
                    );
                }
                continue;
            };
            let Some(key) = asked_set.get(named).copied() else {
                let _ = self.http.fault(
                    AnswerFault::WrongIccid,
                    format!(
                        "{call}: {} names {named}, which was not asked",
                        naming.answer
                    ),
                );
                continue;
            };
            if found.contains_key(key) {
                continue;
            }
            let r = match text(item.get("status")) {
                Some(s) if s != code::OK => {
                    let message = text(item.get("message")).unwrap_or_default();
                    Err(self.refusal(call, &s, &message))
                }
                status => outcome(item, named, status.is_some()),
            };
            found.insert(key, r);
        }
        asked
            .iter()
            .map(|i| {
                found
                    .get(i.as_str())
                    .cloned()
                    .unwrap_or(Err(GatewayError::MissingFromBatch))
            })
            .collect()
    }

    /// Whether the assumed batch query `q` is on for this carrier: the account allows it and the
    /// platform has not answered it as missing since this adapter was built.
    pub(super) fn assumed_on(&self, q: &AssumedQuery) -> bool {
        self.assumed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(q.capability)
    }

    /// Whether any assumed batch query is still on.
    pub(super) fn any_assumed_on(&self) -> bool {
        !self
            .assumed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }

    /// The platform answered `q`'s path as missing: turns `q` off for this carrier (in this
    /// process, until the adapter is rebuilt). The first time only: one warning, one count of
    /// `cmp_carrier_capability_off_total{carrier, call}`.
    fn switch_off(&self, q: &AssumedQuery, e: &GatewayError) {
        let was_on = {
            let mut on = self.assumed.lock().unwrap_or_else(PoisonError::into_inner);
            let was = on.contains(q.capability);
            *on = on.without(q.capability);
            was
        };
        if was_on {
            tracing::warn!(
                carrier = %self.carrier,
                call = q.path,
                error = %e,
                "OneLink has no {}: the assumed call is turned off for this carrier, its cards \
                 are asked with the documented single-card call",
                q.path
            );
            metrics::counter!(
                "cmp_carrier_capability_off_total",
                "carrier" => self.carrier.to_string(),
                "call" => q.path
            )
            .increment(1);
        }
    }

    /// `q` over `iccids`, results in the input order, in chunks of at most `batch_size` cards.
    ///
    /// While the assumed batch query is on, a chunk is one request on its `.../batch` path (an
    /// item naming no card or a card not asked is ignored and counted as a fault; a card no item
    /// names is `MissingFromBatch`; a failed request fails the whole call when it is the first,
    /// else its own cards only). When it is off, or the platform answers its path as missing
    /// (HTTP 404 or 405: the switch goes off for good), each card of the chunk is asked with the
    /// documented single-card call `single`, concurrently (the carrier's budget and permits
    /// pace them), and gets its own outcome.
    pub(super) async fn query_many<'a, T, F, S, Fut>(
        &self,
        q: &AssumedQuery,
        iccids: &'a [String],
        parse: F,
        single: S,
    ) -> Result<Vec<Result<T, GatewayError>>, GatewayError>
    where
        T: Clone,
        F: Fn(&Value) -> Result<T, GatewayError>,
        S: Fn(&'a str) -> Fut,
        Fut: Future<Output = Result<T, GatewayError>>,
    {
        let mut out = Vec::with_capacity(iccids.len());
        for (n, chunk) in iccids.chunks(self.batch_size).enumerate() {
            if self.assumed_on(q) {
                let joined = chunk.join("_");
                match self
                    .call(q.call, false, q.path, &[("iccids", &joined)])
                    .await
                {
                    Ok(items) => {
                        out.extend(
                            self.collate(q.call, chunk, &items, &BY_ICCID, |item, _, _| {
                                parse(item)
                            }),
                        );
                        continue;
                    }
                    Err(e) if interface_missing(&e) => self.switch_off(q, &e),
                    Err(e) if n == 0 => return Err(e),
                    Err(e) => {
                        out.extend(chunk.iter().map(|_| Err(e.clone())));
                        continue;
                    }
                }
            }
            out.extend(join_all(chunk.iter().map(|iccid| single(iccid.as_str()))).await);
        }
        Ok(out)
    }

    /// Asks the platform to change the status of up to `batch_size` cards at once
    /// (`change/sim-status/batch`, `operType` `9` stop / `11` resume, `reason` `01`). The platform
    /// refuses the whole call when one card changed within the lock window
    /// ([`GatewayError::ChangeLocked`]). The outcome per card is read with
    /// [`Self::batch_change_result`].
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) async fn change_status_batch(
        &self,
        iccids: &[String],
        target: NetworkStatus,
    ) -> Result<BatchChange, GatewayError> {
        if iccids.is_empty() {
            return Err(GatewayError::Unsupported("an empty batch status change"));
        }
        if iccids.len() > self.batch_size {
            return Err(GatewayError::Unsupported(
                "a batch status change of more cards than the batch size",
            ));
        }
        let (call, oper) = match target {
            NetworkStatus::Stopped => ("stop", "9"),
            NetworkStatus::Online => ("start", "11"),
        };
        let joined = iccids.join("_");
        let params = [
            ("iccids", joined.as_str()),
            ("operType", oper),
            ("reason", "01"),
        ];
        let items = self
            .http
            .retry_command(call, || {
                self.call(call, true, "/change/sim-status/batch", &params)
            })
            .await?;
        let job_id = items
            .first()
            .and_then(|i| text(i.get("jobId")))
            .filter(|j| !j.is_empty())
            .ok_or_else(|| self.missing(call, "result[0].jobId"))?;
        Ok(BatchChange {
            job_id,
            iccids: iccids.to_vec(),
            target,
        })
    }

    /// Where a batch status change stands (`query/sim-batch-result?jobId=`).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) async fn batch_change_result(
        &self,
        change: &BatchChange,
    ) -> Result<BatchChangeState, GatewayError> {
        const CALL: &str = "batch_result";
        const FIELD: &str = "jobStatus";
        let items = self
            .call(
                CALL,
                false,
                "/query/sim-batch-result",
                &[("jobId", &change.job_id)],
            )
            .await?;
        let item = self.first(CALL, items)?;
        match self.word(CALL, &item, FIELD)?.as_str() {
            "0" | "1" => return Ok(BatchChangeState::Pending),
            "2" | "3" => {}
            "4" => {
                return Err(GatewayError::Carrier {
                    status: 200,
                    body: format!("batch_result: job {} failed (jobStatus 4)", change.job_id),
                });
            }
            other => return Err(self.outside(CALL, FIELD, other)),
        }
        let list = match item.get("resultList") {
            Some(Value::Array(l)) => l.as_slice(),
            _ => &[],
        };
        Ok(BatchChangeState::Done(self.collate(
            CALL,
            &change.iccids,
            list,
            &BY_RESULT_ID,
            |_, named, has_status| {
                if has_status {
                    Ok(change.target)
                } else {
                    Err(self.http.fault(
                        AnswerFault::MissingField,
                        format!("batch_result: no `status` for {named}"),
                    ))
                }
            },
        )))
    }
}
