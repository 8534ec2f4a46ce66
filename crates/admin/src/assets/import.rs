//! `POST /cards/import`: up to 100,000 cards in one request. Every row is checked first
//! (fields, ICCIDs repeated in the file or taken by live cards, devices that do not exist).
//! In the default mode, all or nothing: any bad row refuses the whole import with one error per
//! field, pointing at the row (`/cards/17/iccid`), so that nothing is half-imported. In
//! `partial` mode the good rows are imported in one transaction and each bad row is reported
//! with its errors, for the operator to fix and send again.

use super::cards::CardBody;
use crate::error::{Checks, StoreResultExt};
use crate::{Admin, AdminError, FieldError};
use domain::{CardId, DeviceId, NewCard};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The largest import.
pub const MAX_IMPORT: usize = 100_000;
/// Row errors a refused import reports at most.
const MAX_ROW_ERRORS: usize = 1_000;

/// The body of an import.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImportBody {
    /// 1 to 100,000 cards.
    pub cards: Vec<CardBody>,
}

/// What an import does with bad rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImportMode {
    /// Any bad row refuses the whole import; nothing is written.
    #[default]
    AllOrNothing,
    /// The good rows are imported; each bad row is reported and left out. An import with no
    /// good row is refused as a whole.
    Partial,
}

/// A row a partial import left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RejectedRow {
    /// Its index in `cards`, as in the pointers (`/cards/{row}/...`).
    pub row: usize,
    /// Its line: the 1-based position in `cards`.
    pub line: usize,
    /// Every field of it that is wrong.
    pub errors: Vec<FieldError>,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportReport {
    pub imported: usize,
    /// The new cards' ids, in input order.
    pub ids: Vec<CardId>,
    /// Cards put in the queues now (the others have polling off, or match no config).
    pub enqueued: usize,
    /// The rows a partial import left out, in input order (always empty otherwise).
    #[serde(default)]
    pub rejected: Vec<RejectedRow>,
}

/// Where an import is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImportPhase {
    /// Fields, repeated and taken ICCIDs, devices.
    Checking,
    /// Writing the good rows (one transaction).
    Inserting,
    /// Putting the new cards in the queues.
    Queueing,
    /// Finished: the report is final.
    Done,
}

/// How far an import got, for an operator watching a long one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportProgress {
    pub phase: ImportPhase,
    /// Rows in the file.
    pub rows: usize,
    /// Rows found bad so far (known once checking is over).
    pub rejected: usize,
    /// Cards written (known once inserting is over).
    pub imported: usize,
    /// Cards queued (known once queueing is over).
    pub enqueued: usize,
}

impl ImportProgress {
    pub fn start(rows: usize) -> Self {
        Self {
            phase: ImportPhase::Checking,
            rows,
            rejected: 0,
            imported: 0,
            enqueued: 0,
        }
    }
}

/// The errors grouped by the row their pointer names; `None` when one names no row.
fn rejected_rows(errors: Vec<FieldError>) -> Option<Vec<RejectedRow>> {
    let mut rows: BTreeMap<usize, Vec<FieldError>> = BTreeMap::new();
    for error in errors {
        let row = error
            .pointer
            .strip_prefix("/cards/")
            .and_then(|rest| rest.split('/').next())
            .and_then(|index| index.parse::<usize>().ok())?;
        rows.entry(row).or_default().push(error);
    }
    Some(
        rows.into_iter()
            .map(|(row, errors)| RejectedRow {
                row,
                line: row + 1,
                errors,
            })
            .collect(),
    )
}

/// A refused import: its first errors.
fn refused(mut errors: Vec<FieldError>) -> AdminError {
    errors.truncate(MAX_ROW_ERRORS);
    AdminError::Invalid(errors)
}

impl ImportBody {
    /// The checks that need no I/O: the row count, every row's fields, and ICCIDs repeated
    /// within the body. The cards as they would be written, and what is wrong so far.
    /// A body of no rows or too many is refused before its rows are read.
    fn check_rows(&self) -> Result<(Vec<NewCard>, Checks), FieldError> {
        let rows = &self.cards;
        if rows.is_empty() || rows.len() > MAX_IMPORT {
            return Err(FieldError::new(
                "/cards",
                format!("must hold 1 to {MAX_IMPORT} cards"),
            ));
        }
        let mut checks = Checks::default();
        let new: Vec<NewCard> = rows
            .iter()
            .enumerate()
            .map(|(i, row)| row.check(&format!("/cards/{i}"), &mut checks))
            .collect();
        let mut first_row: HashMap<&str, usize> = HashMap::with_capacity(rows.len());
        for (i, card) in new.iter().enumerate() {
            if let Some(first) = first_row.insert(card.iccid.as_str(), i) {
                checks.fail(
                    format!("/cards/{i}/iccid"),
                    format!("repeats the ICCID of row {first}"),
                );
                first_row.insert(card.iccid.as_str(), first);
            }
        }
        Ok((new, checks))
    }

    /// What is wrong with the body before the database is asked (ICCIDs taken by live cards
    /// and devices that do not exist are found only by [`Admin::import_cards`]); empty when
    /// nothing is. For the fuzz target over imported bodies, and for tests.
    pub fn problems(&self) -> Vec<FieldError> {
        match self.check_rows() {
            Ok((_, checks)) => checks.into_errors(),
            Err(size) => vec![size],
        }
    }
}

impl Admin {
    pub async fn import_cards(
        &self,
        body: &ImportBody,
        mode: ImportMode,
    ) -> Result<ImportReport, AdminError> {
        self.import_cards_watched(body, mode, None).await
    }

    /// [`Admin::import_cards`], telling `progress` each phase it enters.
    pub async fn import_cards_watched(
        &self,
        body: &ImportBody,
        mode: ImportMode,
        progress: Option<&tokio::sync::watch::Sender<ImportProgress>>,
    ) -> Result<ImportReport, AdminError> {
        let tell = |change: &dyn Fn(&mut ImportProgress)| {
            if let Some(p) = progress {
                p.send_modify(|now| change(now));
            }
        };
        let started = std::time::Instant::now();
        let (new, mut checks) = body
            .check_rows()
            .map_err(|size| AdminError::Invalid(vec![size]))?;
        let iccids: Vec<String> = new.iter().map(|c| c.iccid.clone()).collect();
        let taken: HashSet<String> = self
            .stores
            .card_admin
            .existing_iccids(&iccids)
            .await
            .admin()?
            .into_iter()
            .collect();
        let mut devices: Vec<DeviceId> = new.iter().filter_map(|c| c.device_id).collect();
        devices.sort_unstable();
        devices.dedup();
        let live = if devices.is_empty() {
            HashMap::new()
        } else {
            self.stores
                .devices
                .enable_polling_of(&devices)
                .await
                .admin()?
        };
        for (i, card) in new.iter().enumerate() {
            if taken.contains(&card.iccid) {
                checks.fail(
                    format!("/cards/{i}/iccid"),
                    "already belongs to a live card",
                );
            }
            if let Some(d) = card.device_id
                && !live.contains_key(&d)
            {
                checks.fail(
                    format!("/cards/{i}/device_id"),
                    format!("device {d} does not exist"),
                );
            }
        }
        let errors = checks.into_errors();
        let (new, rejected) = if errors.is_empty() {
            (new, Vec::new())
        } else {
            match mode {
                ImportMode::AllOrNothing => return Err(refused(errors)),
                ImportMode::Partial => {
                    let Some(rejected) = rejected_rows(errors.clone()) else {
                        return Err(refused(errors));
                    };
                    if rejected.len() == new.len() {
                        return Err(refused(errors));
                    }
                    let bad: HashSet<usize> = rejected.iter().map(|r| r.row).collect();
                    let good = new
                        .into_iter()
                        .enumerate()
                        .filter(|(i, _)| !bad.contains(i))
                        .map(|(_, card)| card)
                        .collect();
                    (good, rejected)
                }
            }
        };
        let checked = started.elapsed();
        tell(&|p| {
            p.phase = ImportPhase::Inserting;
            p.rejected = rejected.len();
        });
        let ids = self.stores.cards.insert_bulk(&new).await.admin()?;
        let inserted = started.elapsed();
        tell(&|p| {
            p.phase = ImportPhase::Queueing;
            p.imported = ids.len();
        });
        let outcome = self.lifecycle.on_batch_cards_created(&ids).await?;
        tell(&|p| {
            p.phase = ImportPhase::Done;
            p.enqueued = outcome.enqueued;
        });
        tracing::info!(
            ?mode,
            imported = ids.len(),
            rejected = rejected.len(),
            enqueued = outcome.enqueued,
            ?checked,
            ?inserted,
            total = ?started.elapsed(),
            "cards imported"
        );
        Ok(ImportReport {
            imported: ids.len(),
            enqueued: outcome.enqueued,
            ids,
            rejected,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(rows: serde_json::Value) -> ImportBody {
        serde_json::from_value(serde_json::json!({ "cards": rows })).expect("an import body")
    }

    #[test]
    fn problems_point_at_rows_and_repeated_iccids_before_any_io() {
        let clean = body(serde_json::json!([
            {"iccid": "89860000000000000501", "carrier_id": 1},
            {"iccid": "89860000000000000502", "carrier_id": 1, "msisdn": "+8613800000502"},
        ]));
        assert_eq!(clean.problems(), vec![]);

        let bad = body(serde_json::json!([
            {"iccid": "89860000000000000501", "carrier_id": 1},
            {"iccid": " 89860000000000000501 ", "carrier_id": 0, "msisdn": "12a"},
            {"iccid": "12", "carrier_id": 1, "device_id": -3},
        ]));
        let pointers: Vec<String> = bad.problems().into_iter().map(|p| p.pointer).collect();
        assert_eq!(
            pointers,
            [
                "/cards/1/msisdn",
                "/cards/1/carrier_id",
                "/cards/2/iccid",
                "/cards/2/device_id",
                "/cards/1/iccid",
            ]
        );

        assert_eq!(body(serde_json::json!([])).problems()[0].pointer, "/cards");
    }

    #[test]
    fn rejected_rows_group_a_rows_errors_in_input_order() {
        let errors = vec![
            FieldError::new("/cards/7/iccid", "must not be empty"),
            FieldError::new("/cards/2/msisdn", "bad"),
            FieldError::new("/cards/7/device_id", "device 3 does not exist"),
        ];
        let rows = rejected_rows(errors).expect("every pointer names a row");
        assert_eq!(
            rows.iter()
                .map(|r| (r.row, r.line, r.errors.len()))
                .collect::<Vec<_>>(),
            [(2, 3, 1), (7, 8, 2)]
        );
        assert_eq!(rejected_rows(vec![FieldError::new("/cards", "size")]), None);
    }

    #[test]
    fn the_mode_is_all_or_nothing_unless_asked() {
        assert_eq!(ImportMode::default(), ImportMode::AllOrNothing);
        let partial: ImportMode = serde_json::from_str("\"partial\"").unwrap();
        assert_eq!(partial, ImportMode::Partial);
        let all: ImportMode = serde_json::from_str("\"all-or-nothing\"").unwrap();
        assert_eq!(all, ImportMode::AllOrNothing);
    }
}
