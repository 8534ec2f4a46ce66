//! `polling:queue:wake`: how a writer that makes cards due soon tells the dispatch loops of
//! every node, so that a loop with nothing due sleeps until its shards' next entries instead of
//! asking every shard every tick.
//!
//! A loop asks a shard again when the entry the shard's last dequeue named as its earliest
//! comes due, and at the latest after [`WAKE_HORIZON`]. An entry written due sooner than that
//! must wake the loops of its task: every writer of this crate publishes, in the round trip of
//! the write when it can, `<task> <shard> <shard> …` for the shards that got an entry due within
//! the horizon, and `<task> manual` when cards are pushed on the manual list. A loop that misses
//! a message (its subscriber reconnected) is woken for every shard.
//!
//! A message is fast but may be lost. What makes a lost one cost at most a tick is the node's
//! probe (`probe.rs`), one round trip a tick: the lengths of the manual lists (so a card pushed
//! by any system, with a bare `RPUSH` and no message, is seen) and the wake ledger
//! `polling:queue:wake:ledger`, a hash every announcement also writes in the same round trip:
//! field `<task>:<shard>` (or `<task>:all`) set to a value never used before. A field whose
//! value changed since the probe's last look wakes that shard, whether its message arrived or
//! not.

use super::manager::PollingQueueManager;
use crate::{Keys, QueueError, RedisKey};
use chrono::{DateTime, Utc};
use domain::TaskType;
use fred::clients::Pipeline;
use fred::prelude::*;
use fred::types::{Message, Value};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The longest a dispatch loop sleeps without asking a shard, and so how soon an entry must be
/// due for its writer to publish a wake.
pub const WAKE_HORIZON: Duration = Duration::from_secs(30);

/// Whether an entry due at `at` must wake the loops (it may be due before they next ask).
pub(crate) fn due_soon(at: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    at <= now + chrono::Duration::from_std(WAKE_HORIZON).unwrap_or_default()
}

/// The message naming `shards` of `task` (`None` when there are none).
pub(crate) fn shards_message(task: TaskType, shards: &BTreeSet<u32>) -> Option<String> {
    if shards.is_empty() {
        return None;
    }
    let mut msg = String::from(task.as_str());
    for shard in shards {
        let _ = write!(msg, " {shard}");
    }
    Some(msg)
}

/// The message announcing cards on the manual list of `task`.
pub(crate) fn manual_message(task: TaskType) -> String {
    format!("{task} manual")
}

/// The message waking every shard and the manual list of `task` (the initializer's writes).
pub(crate) fn all_message(task: TaskType) -> String {
    format!("{task} all")
}

/// What the loops of one node have been told and not yet taken, per task type.
#[derive(Debug, Clone, Default)]
pub struct Wakes {
    inner: Arc<[TaskWake; 4]>,
}

#[derive(Debug, Default)]
struct TaskWake {
    notify: Notify,
    pending: Mutex<Woken>,
}

/// What woke a loop since it last looked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Woken {
    /// Every shard and the manual list.
    pub all: bool,
    /// Cards were pushed on the manual list.
    pub manual: bool,
    /// Shards that got entries due soon.
    pub shards: BTreeSet<u32>,
}

impl Wakes {
    /// Waits until something wakes the loop of `task` (at once if something did since the last
    /// [`take`](Self::take)).
    pub async fn notified(&self, task: TaskType) {
        self.inner[task.index()].notify.notified().await;
    }

    /// What woke the loop of `task`, cleared.
    pub fn take(&self, task: TaskType) -> Woken {
        std::mem::take(&mut *lock(&self.inner[task.index()].pending))
    }

    /// Wakes every loop for every shard (a subscription (re)started: messages may be lost).
    pub fn wake_all(&self) {
        for task in TaskType::ALL {
            self.wake(task, |w| w.all = true);
        }
    }

    /// Applies one message; a message this version cannot read wakes its task entirely.
    pub fn deliver(&self, message: &str) {
        let mut words = message.split_ascii_whitespace();
        let Some(task) = words.next().and_then(|t| t.parse::<TaskType>().ok()) else {
            tracing::debug!(message, "queue wake for no known task type; ignored");
            return;
        };
        let mut shards = BTreeSet::new();
        let (mut manual, mut all) = (false, false);
        for word in words {
            match word {
                "manual" => manual = true,
                "all" => all = true,
                n => match n.parse::<u32>() {
                    Ok(shard) => {
                        shards.insert(shard);
                    }
                    Err(_) => all = true,
                },
            }
        }
        self.wake(task, |w| {
            w.all |= all;
            w.manual |= manual;
            w.shards.extend(shards);
        });
    }

    /// Whether cards were announced on the manual list of `task` and not yet taken.
    pub fn manual_pending(&self, task: TaskType) -> bool {
        let pending = lock(&self.inner[task.index()].pending);
        pending.manual || pending.all
    }

    pub(crate) fn wake(&self, task: TaskType, f: impl FnOnce(&mut Woken)) {
        let slot = &self.inner[task.index()];
        f(&mut lock(&slot.pending));
        slot.notify.notify_one();
    }
}

fn lock(m: &Mutex<Woken>) -> std::sync::MutexGuard<'_, Woken> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The wake ledger's fields `message` stands for: `<task>:<shard>` per shard it names,
/// `<task>:all` for every shard; none for the manual list (the probe reads the lists' lengths).
pub(crate) fn ledger_fields(message: &str) -> Vec<String> {
    let mut words = message.split_ascii_whitespace();
    let Some(task) = words.next() else {
        return Vec::new();
    };
    words
        .filter(|w| *w != "manual")
        .map(|w| format!("{task}:{w}"))
        .collect()
}

/// A value no ledger field held before: this process's random tag and a counter.
fn ledger_stamp() -> String {
    static TAG: LazyLock<String> = LazyLock::new(|| uuid::Uuid::new_v4().simple().to_string());
    static COUNT: AtomicU64 = AtomicU64::new(0);
    format!("{}-{}", &*TAG, COUNT.fetch_add(1, Ordering::Relaxed))
}

/// Queues in `pipe` the announcement of `message`: its ledger fields stamped, then the message
/// on `polling:queue:wake`.
pub(crate) async fn queue_announcement(
    pipe: &Pipeline<Client>,
    keys: &Keys,
    message: String,
) -> Result<(), Error> {
    let fields = ledger_fields(&message);
    if !fields.is_empty() {
        let stamp = ledger_stamp();
        let pairs: Vec<(String, String)> = fields.into_iter().map(|f| (f, stamp.clone())).collect();
        let _: () = pipe.hset(keys.render(&RedisKey::WakeLedger), pairs).await?;
    }
    pipe.publish(keys.render(&RedisKey::QueueWake), message)
        .await
}

/// Announces `messages` (ledger and channel) in one round trip. A failure is logged, not
/// returned: the write it follows has happened, and the loops find the entries within the
/// horizon.
pub(crate) async fn announce(pool: &Pool, keys: &Keys, messages: Vec<String>) {
    if messages.is_empty() {
        return;
    }
    let pipe = pool.next().pipeline();
    for message in messages {
        if let Err(error) = queue_announcement(&pipe, keys, message).await {
            tracing::debug!(%error, "queue wake not announced; the loops ask within the horizon");
            return;
        }
    }
    let sent: Result<Vec<Value>, _> = pipe.all().await;
    if let Err(error) = sent {
        tracing::debug!(%error, "queue wake not announced; the loops ask within the horizon");
    }
}

impl PollingQueueManager {
    /// Announces `messages` (see [`announce`]).
    pub(crate) async fn publish_wakes(&self, messages: Vec<String>) {
        announce(&self.pool, &self.keys, messages).await;
    }

    /// Subscribes to `polling:queue:wake` (a subscriber client built from the pool's Redis
    /// config) and delivers every message to the returned [`Wakes`] until `shutdown`. The
    /// subscription is active when this returns; after a reconnect every loop is woken.
    pub async fn listen_wakes(&self, shutdown: CancellationToken) -> Result<Wakes, QueueError> {
        let subscriber = crate::subscriber(&self.pool).await?;
        let mut messages = subscriber.message_rx();
        let mut reconnects = subscriber.reconnect_rx();
        subscriber
            .subscribe(self.keys.render(&RedisKey::QueueWake))
            .await?;
        let wakes = Wakes::default();
        let delivered = wakes.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    msg = messages.recv() => match msg {
                        Ok(Message { value, .. }) => match value.as_str() {
                            Some(text) => delivered.deliver(&text),
                            None => delivered.wake_all(),
                        },
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => delivered.wake_all(),
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                            tracing::warn!("queue wake channel closed; loops ask every shard within the horizon");
                            break;
                        }
                    },
                    r = reconnects.recv() => {
                        if r.is_err() {
                            break;
                        }
                        delivered.wake_all();
                    }
                }
            }
            if let Err(error) = subscriber.quit().await {
                tracing::debug!(%error, "queue wake subscriber quit");
            }
        });
        Ok(wakes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_wake_their_task_with_what_they_name() {
        let wakes = Wakes::default();
        let mut shards = BTreeSet::new();
        shards.extend([3, 7]);
        let msg = shards_message(TaskType::Carddata, &shards).expect("shards");
        assert_eq!(msg, "carddata 3 7");
        wakes.deliver(&msg);
        wakes.deliver(&manual_message(TaskType::Carddata));
        wakes.deliver("realname 12");
        wakes.deliver("nonsense 1");
        let woken = wakes.take(TaskType::Carddata);
        assert_eq!(
            woken,
            Woken {
                all: false,
                manual: true,
                shards,
            }
        );
        assert_eq!(
            wakes.take(TaskType::Carddata),
            Woken::default(),
            "taken once"
        );
        assert_eq!(wakes.take(TaskType::Realname).shards.len(), 1);
        wakes.deliver(&all_message(TaskType::Protect));
        wakes.deliver("package x");
        assert!(wakes.take(TaskType::Protect).all);
        assert!(
            wakes.take(TaskType::Package).all,
            "unreadable shard: everything"
        );
        assert_eq!(shards_message(TaskType::Package, &BTreeSet::new()), None);
    }

    #[test]
    fn a_message_stands_for_the_ledger_fields_of_its_shards() {
        assert_eq!(ledger_fields("carddata 3 7"), ["carddata:3", "carddata:7"]);
        assert_eq!(ledger_fields("package all"), ["package:all"]);
        assert!(ledger_fields("realname manual").is_empty());
        assert!(ledger_fields("").is_empty());
        assert_ne!(ledger_stamp(), ledger_stamp());
    }

    #[test]
    fn only_entries_within_the_horizon_wake() {
        let now = Utc::now();
        assert!(due_soon(now, now));
        assert!(due_soon(now + chrono::Duration::seconds(30), now));
        assert!(!due_soon(now + chrono::Duration::seconds(31), now));
        assert!(due_soon(now - chrono::Duration::hours(1), now));
    }
}
