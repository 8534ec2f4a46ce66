//! The platform's three batch queries (BQ019 real-name, BQ020 SIM status, month usage): one
//! frame, told apart by a [`BatchSpec`].

use super::Ctcc;
use crate::{AnswerFault, GatewayError};
use domain::{MonthUsage, NetworkStatus, RealNameStatus};
use serde_json::{Value, json};
use std::collections::HashMap;

/// What distinguishes the three batch queries.
pub(super) struct BatchSpec<T> {
    pub(super) call: &'static str,
    pub(super) path: &'static str,
    /// The body's list field.
    field: &'static str,
    /// The list's key under `data` (`None`: `data` is the list).
    list: Option<&'static str>,
    /// One card's item of the answer.
    parse: fn(&Ctcc, &Value) -> Result<T, GatewayError>,
}

pub(super) const REALNAME: BatchSpec<RealNameStatus> = BatchSpec {
    call: "realname",
    path: "/api/v1/realName/qryRealNameStatus",
    field: "accessNumber",
    list: Some("statusList"),
    parse: Ctcc::parse_realname,
};

pub(super) const SIM_STATUS: BatchSpec<NetworkStatus> = BatchSpec {
    call: "network_status",
    path: "/api/v1/prod/batchQrySimStatus",
    field: "accessNumbers",
    list: Some("simStatusList"),
    parse: Ctcc::parse_network,
};

pub(super) const USAGE: BatchSpec<MonthUsage> = BatchSpec {
    call: "usage",
    path: "/api/v1/batchQry/batchQryFlowByMonth",
    field: "accessNumber",
    list: None,
    parse: Ctcc::parse_usage,
};

struct Batch<T> {
    results: Vec<Result<T, GatewayError>>,
    /// Items naming a card not asked.
    foreign: usize,
}

impl Ctcc {
    /// The cards' results of [`Self::batch`].
    pub(super) async fn batch_results<T>(
        &self,
        spec: &BatchSpec<T>,
        iccids: &[String],
    ) -> Result<Vec<Result<T, GatewayError>>, GatewayError> {
        Ok(self.batch(spec, iccids).await?.results)
    }

    /// One batch query over `iccids`, split into calls of at most `batch_max` numbers. Each
    /// card's item goes through the spec's `parse`; a card the answer does not mention is
    /// `MissingFromBatch`; items naming a card not asked are ignored (counted as a fault). A call
    /// that fails as a whole fails its cards; when every call failed, the outer error.
    async fn batch<T>(
        &self,
        spec: &BatchSpec<T>,
        iccids: &[String],
    ) -> Result<Batch<T>, GatewayError> {
        let mut results = Vec::with_capacity(iccids.len());
        let mut foreign = 0;
        let mut failures = 0;
        let mut last_err = None;
        for chunk in iccids.chunks(self.batch_max) {
            match self.one_batch(spec, chunk).await {
                Ok((mut r, f)) => {
                    results.append(&mut r);
                    foreign += f;
                }
                Err(e) => {
                    failures += 1;
                    results.extend(chunk.iter().map(|_| Err(e.clone())));
                    last_err = Some(e);
                }
            }
        }
        if let Some(e) = last_err
            && failures == iccids.len().div_ceil(self.batch_max)
        {
            return Err(e);
        }
        Ok(Batch { results, foreign })
    }

    async fn one_batch<T>(
        &self,
        spec: &BatchSpec<T>,
        chunk: &[String],
    ) -> Result<(Vec<Result<T, GatewayError>>, usize), GatewayError> {
        let answer = self
            .post_json(spec.call, spec.path, &json!({ spec.field: chunk }))
            .await?;
        let data = self.envelope(spec.call, &answer)?;
        let list = match spec.list {
            Some(key) => data.get(key),
            None => Some(&data),
        }
        .and_then(Value::as_array)
        .ok_or_else(|| {
            self.http.fault(
                AnswerFault::MissingField,
                format!(
                    "{}: no list `{}` in the answer",
                    spec.call,
                    spec.list.unwrap_or("data")
                ),
            )
        })?;
        let mut by_number: HashMap<&str, Vec<&Value>> = HashMap::new();
        let mut foreign = 0;
        for item in list {
            let Some(n) = item.get("accessNumber").and_then(Value::as_str) else {
                foreign += 1;
                let _ = self.http.fault(
                    AnswerFault::MissingField,
                    format!("{}: an item without accessNumber", spec.call),
                );
                continue;
            };
            if chunk.iter().any(|c| c == n) {
                by_number.entry(n).or_default().push(item);
            } else {
                foreign += 1;
                let _ = self.http.fault(
                    AnswerFault::WrongIccid,
                    format!("{}: the answer names {n}, which was not asked", spec.call),
                );
            }
        }
        let parse = |v: &Value| (spec.parse)(self, v);
        let results = chunk
            .iter()
            .map(
                |iccid| match by_number.get(iccid.as_str()).map(Vec::as_slice) {
                    None | Some([]) => Err(GatewayError::MissingFromBatch),
                    Some([one]) => parse(one),
                    Some([first, rest @ ..]) => {
                        if rest.iter().all(|v| v == first) {
                            parse(first)
                        } else {
                            Err(self.http.fault(
                                AnswerFault::BadValue,
                                format!("{}: {iccid} answered twice, differently", spec.call),
                            ))
                        }
                    }
                },
            )
            .collect();
        Ok((results, foreign))
    }

    /// One card through a batch query: a card the answer left out is a fault (an answer naming
    /// another card: `WrongIccid`).
    pub(super) async fn single<T>(
        &self,
        spec: &BatchSpec<T>,
        iccid: &str,
    ) -> Result<T, GatewayError> {
        let b = self.batch(spec, &[iccid.to_owned()]).await?;
        match b.results.into_iter().next() {
            Some(Err(GatewayError::MissingFromBatch)) | None => Err(if b.foreign > 0 {
                self.http.fault(
                    AnswerFault::WrongIccid,
                    format!("{}: the answer names another card than {iccid}", spec.call),
                )
            } else {
                self.http.fault(
                    AnswerFault::MissingField,
                    format!("{}: the answer does not mention {iccid}", spec.call),
                )
            }),
            Some(r) => r,
        }
    }
}
