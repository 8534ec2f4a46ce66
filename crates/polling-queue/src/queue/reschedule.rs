//! Group commit of the handlers' reschedules: the `ZADD XX` of concurrent polls go out as one
//! pipeline of variadic `ZADD XX`, one command per queue key (see the `batch` crate), with the
//! picks of the decisive lanes (`decisive.rs`) in the same pipeline.

use super::{CHUNK, wake};
use crate::{Keys, QueueError, RedisKey};
use batch::Batcher;
use chrono::{DateTime, Utc};
use domain::{CardId, Cause, Clock, TaskType};
use fred::bytes::{Bytes, BytesMut};
use fred::prelude::*;
use fred::types::{ClusterHash, CustomCommand, Value};
use std::collections::BTreeSet;
use std::sync::Arc;

/// One poll's reschedule: the card's next poll of the type, and whether that poll is decisive
/// (it goes in the type's decisive lane too).
pub(crate) type Reschedule = (TaskType, CardId, DateTime<Utc>, bool);

/// The batch writer of reschedules; answers each one `Ok` or the pipeline's error.
pub(crate) type Rescheduler = Batcher<Reschedule, Result<(), Cause>>;

/// The most reschedules one pipeline carries.
const RESCHEDULE_BATCH: usize = 2_000;

/// The writer of one queue manager (its pool, key prefix, shard count and clock).
pub(crate) fn writer(
    pool: Pool,
    keys: Keys,
    shard_count: u32,
    clock: Arc<dyn Clock>,
) -> Rescheduler {
    Batcher::new(
        "reschedule",
        RESCHEDULE_BATCH,
        move |entries: Vec<Reschedule>| {
            let (pool, keys, now) = (pool.clone(), keys.clone(), clock.now());
            async move {
                let n = entries.len();
                match zadd_xx_many(&pool, &keys, shard_count, entries, now).await {
                    Ok(()) => vec![Ok(()); n],
                    Err(error) => vec![Err(Cause::new(error)); n],
                }
            }
        },
    )
}

/// `ZADD XX` of many (task, card, time, decisive) entries: one command per queue key (members
/// in input order, so of two entries of one card the later wins), and a plain `ZADD` per
/// decisive lane of the decisive ones, all in one pipeline. A pick whose `ZADD XX` found no
/// entry (the card was removed meanwhile) is dropped when the lane is taken.
///
/// The arguments are built without a `String` per card: the score, a whole millisecond, and
/// the member are written as decimal text into one buffer shared by the batch (digit by digit,
/// not through `fmt`, and not as `Value::Integer`, which the protocol encoder sizes with two
/// `log10` calls: the profile of the no-op cycle showed both); each argument is a slice of it.
/// The rendered queue key is shared by every command of its queue. Entries due soon (a card
/// handed back due now, a short retry) wake the dispatch loops in the same round trip.
async fn zadd_xx_many(
    pool: &Pool,
    keys: &Keys,
    shard_count: u32,
    entries: Vec<Reschedule>,
    now: DateTime<Utc>,
) -> Result<(), QueueError> {
    let shards = shard_count.max(1) as usize;
    // `[task * shards + shard]` -> the pairs (score, member) of that queue, in input order.
    let mut queues: Vec<Vec<Value>> = vec![Vec::new(); 4 * shards];
    // `[task]` -> the pairs (score, member) of that type's decisive lane.
    let mut lanes: [Vec<Value>; 4] = Default::default();
    let mut soon: [BTreeSet<u32>; 4] = Default::default();
    let mut text = BytesMut::with_capacity(entries.len() * 15);
    for (task, card, at, decisive) in entries {
        let shard = card.shard(shard_count);
        let queue = task.index() * shards + shard as usize;
        let Some(args) = queues.get_mut(queue) else {
            continue;
        };
        if wake::due_soon(at, now) {
            soon[task.index()].insert(shard);
        }
        let (score, member) = (
            Value::Bytes(score_text(&mut text, at)),
            Value::Bytes(integer_text(&mut text, card.get())),
        );
        if decisive {
            lanes[task.index()].extend([score.clone(), member.clone()]);
        }
        args.extend([score, member]);
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
    for (task, pairs) in TaskType::ALL.into_iter().zip(&lanes) {
        let key = Value::from(keys.render(&RedisKey::Decisive { task }));
        for chunk in pairs.chunks(2 * CHUNK) {
            let mut args = Vec::with_capacity(1 + chunk.len());
            args.push(key.clone());
            args.extend_from_slice(chunk);
            let _: () = pipe.custom(zadd.clone(), args).await?;
        }
    }
    for (task, shards) in TaskType::ALL.into_iter().zip(&soon) {
        if let Some(message) = wake::shards_message(task, shards) {
            wake::queue_announcement(&pipe, keys, message).await?;
        }
    }
    let _: Vec<Value> = pipe.all().await?;
    Ok(())
}

/// The queue score of `at` (unix seconds, whole milliseconds: see `score::to_score`) as
/// decimal text, written at the end of `buf` and split off it.
fn score_text(buf: &mut BytesMut, at: DateTime<Utc>) -> Bytes {
    let ms = at.timestamp_millis();
    if ms < 0 {
        buf.extend_from_slice(b"-");
    }
    let (secs, frac) = (ms.unsigned_abs() / 1000, ms.unsigned_abs() % 1000);
    put_digits(buf, secs);
    if frac != 0 {
        buf.extend_from_slice(&[
            b'.',
            b'0' + (frac / 100) as u8,
            b'0' + (frac / 10 % 10) as u8,
            b'0' + (frac % 10) as u8,
        ]);
    }
    buf.split().freeze()
}

/// `n` as decimal text, written at the end of `buf` and split off it.
fn integer_text(buf: &mut BytesMut, n: i64) -> Bytes {
    if n < 0 {
        buf.extend_from_slice(b"-");
    }
    put_digits(buf, n.unsigned_abs());
    buf.split().freeze()
}

/// Appends the decimal digits of `n`.
fn put_digits(buf: &mut BytesMut, n: u64) {
    let mut digits = [0u8; 20];
    let start = super::bulk_resp::decimal(&mut digits, n);
    buf.extend_from_slice(&digits[start..]);
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
            1_767_225_600_999,
            -1_500,
        ] {
            let at = Utc.timestamp_millis_opt(ms).single().expect("a valid time");
            let text = score_text(&mut buf, at);
            let parsed: f64 = std::str::from_utf8(&text)
                .expect("ascii")
                .parse()
                .expect("a number");
            assert_eq!(parsed, crate::queue::score::to_score(at), "{ms}");
        }
        assert!(buf.is_empty());
    }

    #[test]
    fn integer_text_is_the_integer_in_decimal() {
        let mut buf = BytesMut::new();
        for n in [0_i64, 7, 10, 1_234_567_890_123, i64::MAX, -42, i64::MIN] {
            assert_eq!(&integer_text(&mut buf, n)[..], n.to_string().as_bytes());
        }
        assert!(buf.is_empty());
    }
}
