//! A node's look, once a tick, at what may have become due without a wake reaching it: the
//! lengths of the manual lists and the wake ledger (see `wake.rs`). One round trip of one
//! command per list and one `HGETALL`, whatever the fleet.

use super::wake::Wakes;
use crate::{PollingQueueManager, QueueError, RedisKey};
use domain::TaskType;
use fred::prelude::*;
use fred::types::Value;
use std::collections::{BTreeSet, HashMap};

/// What a node's probe saw at its last look: the ledger's fields and their values.
#[derive(Debug)]
pub struct WakeProbe {
    tasks: Vec<TaskType>,
    /// `None` until the first look, which wakes nothing on the ledger's account: the loops'
    /// first round asks every shard anyway.
    seen: Option<HashMap<String, String>>,
}

impl WakeProbe {
    /// A probe of the manual lists of `tasks` (the types this node polls) and the ledger.
    pub fn new(tasks: impl IntoIterator<Item = TaskType>) -> Self {
        WakeProbe {
            tasks: tasks.into_iter().collect(),
            seen: None,
        }
    }

    /// Wakes, in `wakes`, the loops of the manual lists that hold cards and of the shards whose
    /// ledger field changed since the last look (every shard for `<task>:all`).
    fn apply(&mut self, lengths: &[u64], ledger: HashMap<String, String>, wakes: &Wakes) {
        for (task, len) in self.tasks.iter().zip(lengths) {
            if *len > 0 {
                wakes.wake(*task, |w| w.manual = true);
            }
        }
        if let Some(seen) = &self.seen {
            let mut woken: HashMap<TaskType, (bool, BTreeSet<u32>)> = HashMap::new();
            for (field, value) in &ledger {
                if seen.get(field) == Some(value) {
                    continue;
                }
                let Some((task, target)) = field.split_once(':') else {
                    continue;
                };
                let Ok(task) = task.parse::<TaskType>() else {
                    continue;
                };
                let entry = woken.entry(task).or_default();
                match target.parse::<u32>() {
                    Ok(shard) => {
                        entry.1.insert(shard);
                    }
                    Err(_) => entry.0 = true,
                }
            }
            for (task, (all, shards)) in woken {
                if self.tasks.contains(&task) {
                    wakes.wake(task, |w| {
                        w.all |= all;
                        w.shards.extend(shards);
                    });
                }
            }
        }
        self.seen = Some(ledger);
    }
}

impl PollingQueueManager {
    /// One look of `probe` (see [`WakeProbe`]), delivered into `wakes`.
    pub async fn probe_wakes(
        &self,
        probe: &mut WakeProbe,
        wakes: &Wakes,
    ) -> Result<(), QueueError> {
        let pipe = self.pool.next().pipeline();
        for task in &probe.tasks {
            let _: () = pipe
                .llen(self.keys.render(&RedisKey::Manual { task: *task }))
                .await?;
        }
        let _: () = pipe
            .hgetall(self.keys.render(&RedisKey::WakeLedger))
            .await?;
        let mut replies: Vec<Value> = pipe.all().await?;
        let ledger = replies
            .pop()
            .map(Value::convert)
            .transpose()?
            .unwrap_or_default();
        let lengths: Vec<u64> = replies
            .into_iter()
            .map(|v| v.convert().unwrap_or(0))
            .collect();
        probe.apply(&lengths, ledger, wakes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(fields: &[(&str, &str)]) -> HashMap<String, String> {
        fields
            .iter()
            .map(|(f, v)| ((*f).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_changed_field_wakes_its_shard_and_a_list_with_cards_its_loop() {
        let wakes = Wakes::default();
        let mut probe = WakeProbe::new([TaskType::Carddata, TaskType::Realname]);
        // The first look only learns the ledger.
        probe.apply(&[0, 2], ledger(&[("carddata:3", "a-1")]), &wakes);
        assert_eq!(wakes.take(TaskType::Carddata), Default::default());
        assert!(wakes.take(TaskType::Realname).manual, "cards on the list");
        // A new stamp on shard 3, a new field for shard 9, `all` for realname, a type this
        // node does not poll: only what changed, only for the types polled here.
        probe.apply(
            &[0, 0],
            ledger(&[
                ("carddata:3", "a-2"),
                ("carddata:9", "b-1"),
                ("realname:all", "c-1"),
                ("package:4", "d-1"),
                ("nonsense", "e-1"),
            ]),
            &wakes,
        );
        let carddata = wakes.take(TaskType::Carddata);
        assert_eq!(carddata.shards, BTreeSet::from([3, 9]));
        assert!(!carddata.all && !carddata.manual);
        assert!(wakes.take(TaskType::Realname).all);
        assert_eq!(wakes.take(TaskType::Package), Default::default());
        // Nothing changed: nothing woken.
        probe.apply(
            &[0, 0],
            ledger(&[("carddata:3", "a-2"), ("carddata:9", "b-1")]),
            &wakes,
        );
        assert_eq!(wakes.take(TaskType::Carddata), Default::default());
    }
}
