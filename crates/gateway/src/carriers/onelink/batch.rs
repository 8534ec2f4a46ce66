//! The batch calls: the queries on `.../batch` (`iccids=a_b_c`), and the batch status change, a
//! job whose result is read with `query/sim-batch-result`.

use super::OneLink;
use super::wire::{code, text};
use crate::{AnswerFault, GatewayError};
use domain::NetworkStatus;
use serde_json::Value;
use std::collections::{HashMap, HashSet};

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

    /// A batch query over `iccids` in requests of at most `batch_size` cards; results in the
    /// input order. An item naming no card or a card not asked is ignored (counted as a fault);
    /// a card no item names is `MissingFromBatch`. A failed request fails the whole call when it
    /// is the first; a later one fails its own cards only.
    pub(super) async fn batch<T, F>(
        &self,
        call: &'static str,
        path: &str,
        iccids: &[String],
        parse: F,
    ) -> Result<Vec<Result<T, GatewayError>>, GatewayError>
    where
        T: Clone,
        F: Fn(&Value) -> Result<T, GatewayError>,
    {
        let mut out = Vec::with_capacity(iccids.len());
        for (n, chunk) in iccids.chunks(self.batch_size).enumerate() {
            let joined = chunk.join("_");
            let items = match self.call(call, false, path, &[("iccids", &joined)]).await {
                Ok(items) => items,
                Err(e) if n == 0 => return Err(e),
                Err(e) => {
                    out.extend(chunk.iter().map(|_| Err(e.clone())));
                    continue;
                }
            };
            out.extend(self.collate(call, chunk, &items, &BY_ICCID, |item, _, _| parse(item)));
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
