//! Group commit of the handlers' reschedules: the `ZADD XX` of concurrent polls go out as one
//! pipeline of variadic `ZADD XX`, one command per queue key (see the `batch` crate).

use crate::queue_manager::CHUNK;
use crate::score::group_by_shard;
use crate::{Keys, QueueError};
use batch::Batcher;
use chrono::{DateTime, Utc};
use domain::{CardId, TaskType};
use fred::prelude::*;
use fred::types::{SetOptions, Value};

/// One poll's reschedule.
pub(crate) type Reschedule = (TaskType, CardId, DateTime<Utc>);

/// The batch writer of reschedules; answers each one `Ok` or the pipeline's error.
pub(crate) type Rescheduler = Batcher<Reschedule, Result<(), String>>;

/// The most reschedules one pipeline carries.
const RESCHEDULE_BATCH: usize = 2_000;

/// The writer of one queue manager (its pool, key prefix and shard count).
pub(crate) fn writer(pool: Pool, keys: Keys, shard_count: u32) -> Rescheduler {
    Batcher::new(
        "reschedule",
        RESCHEDULE_BATCH,
        move |entries: Vec<Reschedule>| {
            let (pool, keys) = (pool.clone(), keys.clone());
            async move {
                let n = entries.len();
                match zadd_xx_many(&pool, &keys, shard_count, entries).await {
                    Ok(()) => vec![Ok(()); n],
                    Err(error) => vec![Err(error.to_string()); n],
                }
            }
        },
    )
}

/// `ZADD XX` of many (task, card, time) entries: one command per queue key (members in input
/// order, so of two entries of one card the later wins), all in one pipeline.
async fn zadd_xx_many(
    pool: &Pool,
    keys: &Keys,
    shard_count: u32,
    entries: Vec<Reschedule>,
) -> Result<(), QueueError> {
    let mut by_task: [Vec<(CardId, DateTime<Utc>)>; 4] = Default::default();
    for (task, card, at) in entries {
        by_task[task.index()].push((card, at));
    }
    let pipe = pool.next().pipeline();
    for task in TaskType::ALL {
        let entries = &by_task[task.index()];
        for (shard, members) in group_by_shard(entries, shard_count) {
            let key = keys.shard_queue(shard, task);
            for chunk in members.chunks(CHUNK) {
                let _: () = pipe
                    .zadd(
                        key.as_str(),
                        Some(SetOptions::XX),
                        None,
                        false,
                        false,
                        chunk.to_vec(),
                    )
                    .await?;
            }
        }
    }
    let _: Vec<Value> = pipe.all().await?;
    Ok(())
}
