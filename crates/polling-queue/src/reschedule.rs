//! Group commit of the handlers' reschedules: the `ZADD XX` of concurrent polls go out as one
//! pipeline of variadic `ZADD XX`, one command per queue key (see the `batch` crate).

use crate::queue_manager::CHUNK;
use crate::{Keys, QueueError};
use batch::Batcher;
use chrono::{DateTime, Utc};
use domain::{CardId, TaskType};
use fred::bytes::{Bytes, BytesMut};
use fred::prelude::*;
use fred::types::{ClusterHash, CustomCommand, Value};

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
///
/// The arguments are built without a `String` per card: the member is a `Value::Integer`
/// (written as a decimal bulk string by the protocol encoder) and the score, a whole
/// millisecond, is written once as decimal text into one buffer shared by the batch; each
/// argument is a slice of it. The rendered queue key is shared by every command of its queue.
async fn zadd_xx_many(
    pool: &Pool,
    keys: &Keys,
    shard_count: u32,
    entries: Vec<Reschedule>,
) -> Result<(), QueueError> {
    let shards = shard_count.max(1) as usize;
    // `[task * shards + shard]` -> the pairs (score, member) of that queue, in input order.
    let mut queues: Vec<Vec<Value>> = vec![Vec::new(); 4 * shards];
    let mut text = BytesMut::with_capacity(entries.len() * 15);
    for (task, card, at) in entries {
        let queue = task.index() * shards + card.shard(shard_count) as usize;
        let Some(args) = queues.get_mut(queue) else {
            continue;
        };
        args.push(Value::Bytes(score_text(&mut text, at)));
        args.push(Value::Integer(card.get()));
    }
    let zadd = CustomCommand::new_static("ZADD", ClusterHash::FirstKey, false);
    let pipe = pool.next().pipeline();
    for (queue, pairs) in queues.iter().enumerate() {
        if pairs.is_empty() {
            continue;
        }
        let task = TaskType::ALL[queue / shards];
        let key = Value::from(keys.shard_queue((queue % shards) as u32, task));
        for chunk in pairs.chunks(2 * CHUNK) {
            let mut args = Vec::with_capacity(2 + chunk.len());
            args.push(key.clone());
            args.push(Value::from_static_str("XX"));
            args.extend_from_slice(chunk);
            let _: () = pipe.custom(zadd.clone(), args).await?;
        }
    }
    let _: Vec<Value> = pipe.all().await?;
    Ok(())
}

/// The queue score of `at` (unix seconds, whole milliseconds: see `score::to_score`) as
/// decimal text, written at the end of `buf` and split off it.
fn score_text(buf: &mut BytesMut, at: DateTime<Utc>) -> Bytes {
    use std::fmt::Write as _;
    let ms = at.timestamp_millis();
    let sign = if ms < 0 { "-" } else { "" };
    let (secs, frac) = (ms.unsigned_abs() / 1000, ms.unsigned_abs() % 1000);
    // Writing into a BytesMut cannot fail.
    let _ = if frac == 0 {
        write!(buf, "{sign}{secs}")
    } else {
        write!(buf, "{sign}{secs}.{frac:03}")
    };
    buf.split().freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn score_text_is_the_score_in_decimal() {
        let mut buf = BytesMut::new();
        for ms in [
            1_767_225_600_250_i64,
            1_767_225_600_000,
            1_767_225_600_007,
            -1_500,
        ] {
            let at = Utc.timestamp_millis_opt(ms).single().expect("a valid time");
            let text = score_text(&mut buf, at);
            let parsed: f64 = std::str::from_utf8(&text)
                .expect("ascii")
                .parse()
                .expect("a number");
            assert_eq!(parsed, crate::score::to_score(at), "{ms}");
        }
        assert!(buf.is_empty());
    }
}
