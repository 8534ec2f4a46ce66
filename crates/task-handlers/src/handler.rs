//! The one small trait every poll handler implements, and the one place they are registered.

use domain::{CardId, TaskType};
use std::sync::Arc;

/// What became of one card's poll. The handler has already rescheduled the card in every case;
/// the outcome only feeds counters and metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Polled; rescheduled at its config's interval.
    Success,
    /// The poll failed (gateway, store, Redis); rescheduled at the retry interval.
    Failure,
    /// The cluster-wide pool of the type was full, or the carrier budget had no slot for the
    /// query (no request made); rescheduled for now.
    RequeuedFull,
    /// Nothing to poll: the card is gone, disabled, or no longer scheduled for this type.
    Skipped,
}

impl Outcome {
    pub const fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::RequeuedFull => "requeued_full",
            Outcome::Skipped => "skipped",
        }
    }
}

/// A poll handler: one per task type.
#[async_trait::async_trait]
pub trait TaskHandler: Send + Sync {
    fn task_type(&self) -> TaskType;

    /// Polls one card and reschedules it. Never panics on bad data and never returns without
    /// rescheduling (or deliberately dropping a card that is gone or disabled).
    async fn handle(&self, card: CardId) -> Outcome;
}

/// The handlers by task type.
#[derive(Clone)]
pub struct Registry {
    handlers: [Option<Arc<dyn TaskHandler>>; 4],
}

impl Registry {
    /// A registry with the given handlers; a later handler of the same type replaces an
    /// earlier one.
    pub fn new(handlers: impl IntoIterator<Item = Arc<dyn TaskHandler>>) -> Self {
        let mut slots: [Option<Arc<dyn TaskHandler>>; 4] = [None, None, None, None];
        for h in handlers {
            let i = h.task_type().index();
            slots[i] = Some(h);
        }
        Registry { handlers: slots }
    }

    pub fn get(&self, task: TaskType) -> Option<&Arc<dyn TaskHandler>> {
        self.handlers[task.index()].as_ref()
    }

    /// The task types that have a handler.
    pub fn task_types(&self) -> impl Iterator<Item = TaskType> + '_ {
        TaskType::ALL.into_iter().filter(|t| self.get(*t).is_some())
    }
}
