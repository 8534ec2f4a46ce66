//! Group commit of real-name polls: the `set_real_name` calls of concurrent polls in one
//! transaction of one compare-and-set `UPDATE … FROM UNNEST` and one read of the cards it did
//! not change.
//!
//! The rule of the single-card write holds per poll: only a status that differs from the
//! database row's is written, and whether it changed is the statement's answer, not a
//! comparison with a copy. Two polls of one card in one batch are applied in the order they
//! were submitted: the batch runs in rounds in which each card appears once, each round's
//! statements seeing the earlier rounds' writes (one transaction), so the second poll sees the
//! first one's status exactly as it would one statement later. Unchanged cards are not locked
//! (the compare-and-set's `WHERE` leaves them alone), so the common poll writes nothing. A batch
//! that fails writes nothing: every caller gets the error and reschedules its card at the retry
//! interval; a deadlock is retried once first.
//!
//! Costs per batch, whatever its size: one `BEGIN`, two statements a round, one `COMMIT`.

use super::group_commit;
use crate::convert;
use crate::entity::iot_card;
use crate::error::db_err;
use crate::sql::{models, stmt};
use batch::Batcher;
use domain::store::{RealNameWrite, StoreResult};
use domain::{CardId, RealNameStatus};
use sea_orm::{DatabaseConnection, TransactionTrait};
use std::collections::HashMap;

/// The most polls one transaction carries.
const MAX_BATCH: usize = 1_000;

/// Compare-and-set of many cards: only a status that differs is written.
const SET_REAL_NAMES: &str = r#"
UPDATE tb_iot_card c SET real_name_status = v.status, updated_at = now()
FROM UNNEST($1::bigint[], $2::smallint[]) AS v(id, status)
WHERE c.id = v.id AND c.deleted_at IS NULL AND c.real_name_status <> v.status
RETURNING c.*
"#;

const GET_LIVE_MANY: &str =
    "SELECT * FROM tb_iot_card WHERE id = ANY($1) AND deleted_at IS NULL ORDER BY id";

/// One poll's answer, as `CardStore::set_real_name` takes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RealNamePoll {
    pub(crate) id: CardId,
    pub(crate) status: RealNameStatus,
}

pub(crate) type RealNameAnswer = StoreResult<Option<RealNameWrite>>;

/// The group-commit writer of one pool.
pub(crate) fn writer(db: DatabaseConnection) -> Batcher<RealNamePoll, RealNameAnswer> {
    Batcher::new("real-name", MAX_BATCH, move |polls: Vec<RealNamePoll>| {
        let db = db.clone();
        async move { flush(&db, &polls).await }
    })
}

async fn flush(db: &DatabaseConnection, polls: &[RealNamePoll]) -> Vec<RealNameAnswer> {
    group_commit::retried("real-name", polls.len(), || write(db, polls))
        .await
        .unwrap_or_else(|error| group_commit::each_failed(polls.len(), error))
}

/// The round of each poll: its card's number of earlier polls in the batch.
fn rounds(polls: &[RealNamePoll]) -> Vec<usize> {
    let mut seen: HashMap<CardId, usize> = HashMap::with_capacity(polls.len());
    polls
        .iter()
        .map(|poll| {
            let n = seen.entry(poll.id).or_default();
            *n += 1;
            *n - 1
        })
        .collect()
}

async fn write(
    db: &DatabaseConnection,
    polls: &[RealNamePoll],
) -> StoreResult<Vec<RealNameAnswer>> {
    let round_of = rounds(polls);
    let last_round = round_of.iter().copied().max().unwrap_or(0);
    let mut answers: Vec<Option<RealNameAnswer>> = polls.iter().map(|_| None).collect();
    let txn = db.begin().await.map_err(db_err)?;
    for round in 0..=last_round {
        let members: Vec<usize> = (0..polls.len()).filter(|&i| round_of[i] == round).collect();
        let (ids, statuses): (Vec<i64>, Vec<i16>) = members
            .iter()
            .map(|&i| (polls[i].id.get(), i16::from(polls[i].status)))
            .unzip();
        let changed = models::<iot_card::Entity, _>(
            &txn,
            stmt(SET_REAL_NAMES, [ids.clone().into(), statuses.into()]),
        )
        .await?;
        let mut cards: HashMap<i64, (bool, iot_card::Model)> = changed
            .into_iter()
            .map(|row| (row.id, (true, row)))
            .collect();
        let unchanged: Vec<i64> = ids
            .iter()
            .copied()
            .filter(|id| !cards.contains_key(id))
            .collect();
        if !unchanged.is_empty() {
            for row in
                models::<iot_card::Entity, _>(&txn, stmt(GET_LIVE_MANY, [unchanged.into()])).await?
            {
                cards.insert(row.id, (false, row));
            }
        }
        for &i in &members {
            let answer = match cards.get(&polls[i].id.get()) {
                Some((changed, row)) => Some(RealNameWrite {
                    changed: *changed,
                    card: convert::card(row.clone())?,
                }),
                None => None,
            };
            answers[i] = Some(Ok(answer));
        }
    }
    txn.commit().await.map_err(db_err)?;
    Ok(answers
        .into_iter()
        .map(|answer| answer.unwrap_or(Ok(None)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_polled_twice_goes_to_a_second_round() {
        let poll = |id: i64| RealNamePoll {
            id: CardId(id),
            status: RealNameStatus::Verified,
        };
        assert_eq!(
            rounds(&[poll(1), poll(2), poll(1), poll(1), poll(3)]),
            vec![0, 0, 1, 2, 0]
        );
    }
}
