//! Answers of the asset, polling-config and manual-trigger routes.

use super::FieldError;
use crate::error::Problem;
use crate::imports;
use crate::mirror::{mirror_enum, view};
use chrono::{DateTime, Utc};
use domain::{
    Card, CardId, CardMatchFields, Device, DeviceId, PackageUsage, PollingConfig, PollingConfigId,
    TaskType, UsageHour,
};

view! {
    /// The outcome of a decision, or why none could be taken.
    struct Evaluation from admin::Evaluation {
        card_id: CardId,
        action: EvaluationAction,
        /// The stop reason set, or why nothing was done (`protect_period`, `manual_stop`, ...).
        reason: Option<String>,
        /// Why the evaluation failed (the card is unchanged then).
        error: Option<String>,
    }
}

mirror_enum! {
    /// What an evaluation did to the card: `stopped`, `started` (by the carrier),
    /// `reason_changed` (stays stopped, for another reason), `nothing`, or `failed` (no
    /// decision could be carried out: carrier down, card busy; the card is unchanged).
    #[serde(rename_all = "snake_case")]
    enum EvaluationAction mirrors admin::EvaluationAction {
        Stopped,
        Started,
        ReasonChanged,
        Nothing,
        Failed,
    }
}

view! {
    /// A card and what an operator action did to it.
    struct CardAction from admin::CardAction {
        card: Card,
        evaluation: Evaluation,
    }
}

mirror_enum! {
    /// What an import does with bad rows: `all-or-nothing` (the default) refuses the whole
    /// import on any bad row; `partial` imports the good rows and reports each bad one.
    enum ImportMode mirrors admin::ImportMode {
        #[serde(rename = "all-or-nothing")] AllOrNothing,
        #[serde(rename = "partial")] Partial,
    }
}

view! {
    /// A row a partial import left out, and why.
    struct RejectedRow from admin::RejectedRow {
        /// Its index in `cards`, as in the pointers (`/cards/{row}/...`).
        row: usize,
        /// Its line: the 1-based position in `cards`.
        line: usize,
        /// Every field of it that is wrong.
        errors: Vec<FieldError>,
    }
}

view! {
    /// What an import did.
    struct ImportReport from admin::ImportReport {
        imported: usize,
        /// The new cards' ids, in input order.
        ids: Vec<CardId>,
        /// Cards put in the queues now (the others have polling off, or match no config).
        enqueued: usize,
        /// The rows a `partial` import left out, in input order (always empty otherwise).
        rejected: Vec<RejectedRow>,
    }
}

mirror_enum! {
    /// Where an import is.
    enum ImportPhase mirrors admin::ImportPhase {
        #[serde(rename = "checking")] Checking,
        #[serde(rename = "inserting")] Inserting,
        #[serde(rename = "queueing")] Queueing,
        #[serde(rename = "done")] Done,
    }
}

view! {
    /// How far an import got.
    struct ImportProgress from admin::ImportProgress {
        phase: ImportPhase,
        /// Rows in the file.
        rows: usize,
        /// Rows found bad (known once checking is over).
        rejected: usize,
        /// Cards written (known once inserting is over).
        imported: usize,
        /// Cards queued (known once queueing is over).
        enqueued: usize,
    }
}

mirror_enum! {
    /// Where a background import is: `running`, `done` (the report is final), `failed`
    /// (refused: `problem`; nothing written) or `lost` (its API replica stopped while it ran:
    /// every good row or none was written).
    enum ImportJobState mirrors imports::JobState {
        #[serde(rename = "running")] Running,
        #[serde(rename = "done")] Done,
        #[serde(rename = "failed")] Failed,
        #[serde(rename = "lost")] Lost,
    }
}

view! {
    /// A background import (`POST /cards/import?background=true`).
    struct ImportJob from imports::ImportJob {
        /// Read it at `GET /cards/import/{job_id}` on any replica, for 24 h.
        id: String,
        state: ImportJobState,
        mode: ImportMode,
        progress: ImportProgress,
        /// The import's report once `done`.
        report: Option<ImportReport>,
        /// Why it was refused, once `failed` (as the synchronous import would answer it).
        problem: Option<Problem>,
        started_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
    }
}

view! {
    /// The answer.
    struct MonthUsage from admin::MonthUsage {
        card_id: CardId,
        /// `YYYY-MM`, a month of `timezone`'s calendar.
        month: String,
        /// `CMP_TIMEZONE`, the calendar the month is taken in.
        timezone: String,
        /// The month's first instant.
        from: DateTime<Utc>,
        /// The next month's first instant.
        to: DateTime<Utc>,
        /// The card's usage records grouped by hour, oldest first; hours without a record are
        /// absent.
        hours: Vec<UsageHour>,
    }
}

view! {
    /// A device with the ids of its cards.
    struct DeviceView from admin::DeviceView {
        #[serde(flatten)]
        device: Device,
        card_ids: Vec<CardId>,
    }
}

view! {
    /// What a bind or unbind did: the card now, and the decision taken on its new packages.
    struct BindOutcome from admin::BindOutcome {
        card: domain::Card,
        evaluation: Evaluation,
    }
}

view! {
    /// What a device stop or start did.
    struct DeviceSwitchReport from admin::DeviceSwitchReport {
        device_id: DeviceId,
        /// `stop` or `start`: the protect period now running.
        protect: String,
        /// Seconds the protect period lasts.
        protect_secs: u64,
        cards: Vec<DeviceCardResult>,
        failed: usize,
    }
}

view! {
    /// One card of a device stop or start.
    struct DeviceCardResult from admin::DeviceCardResult {
        card_id: CardId,
        /// `stopped`, `started`, `unchanged` or `failed`.
        outcome: String,
        error: Option<String>,
    }
}

mirror_enum! {
    /// The kind of asset.
    #[serde(rename_all = "lowercase")]
    enum AssetType mirrors admin::AssetType {
        Card,
        Device,
    }
}

view! {
    /// What the switch did.
    struct PollingStatusReport from admin::PollingStatusReport {
        asset_type: AssetType,
        id: i64,
        enable_polling: bool,
        /// Cards the event was applied to.
        cards: usize,
        /// Cards now in the queues of their config.
        enqueued: usize,
        /// Cards taken out of every queue.
        removed: usize,
        evaluations: Vec<Evaluation>,
    }
}

view! {
    /// A purchase and the decisions taken on the cards it covers.
    struct PackageUsageOutcome from admin::PackageUsageOutcome {
        usage: PackageUsage,
        /// Whether it was activated at once (the owner had no valid package).
        activated: bool,
        evaluations: Vec<Evaluation>,
    }
}

view! {
    /// What a trigger pushed.
    struct TriggerReport from admin::TriggerReport {
        /// Cards pushed (per task type).
        cards: usize,
        task_types: Vec<TaskType>,
        /// Ids that are not live cards (skipped); at most 100 listed.
        missing: Vec<CardId>,
        /// By filter: more cards matched than one trigger pushes.
        truncated: bool,
        log_id: i64,
    }
}

view! {
    /// Length of one manual list.
    struct ManualListLen from admin::ManualListLen {
        task_type: TaskType,
        waiting: u64,
    }
}

view! {
    /// What a cancel removed.
    struct CancelReport from admin::CancelReport {
        cleared: Vec<ManualListLen>,
    }
}

view! {
    /// `GET /polling-configs/match?card_id=`: the config a card matches, and why.
    struct ConfigMatch from admin::ConfigMatch {
        card_id: CardId,
        /// The fields matching reads.
        card: CardMatchFields,
        /// `null`: no enabled config matches; the card is not polled.
        matched: Option<PollingConfig>,
        /// Every config in matching order (ascending priority, then id), enabled or not.
        candidates: Vec<ConfigCandidate>,
        /// One sentence.
        reason: String,
    }
}

view! {
    /// How one config fared against the card, in matching order.
    struct ConfigCandidate from admin::ConfigCandidate {
        id: PollingConfigId,
        name: String,
        priority: i32,
        enabled: bool,
        /// Every set condition holds (a disabled config is never chosen, whatever this says).
        matches: bool,
        conditions: Vec<ConditionCheck>,
    }
}

view! {
    /// One condition of a config, checked against a card.
    struct ConditionCheck from admin::ConditionCheck {
        /// `card_condition`, `card_category` or `carrier_id`.
        field: String,
        /// What the config requires.
        required: String,
        /// What the card has.
        actual: String,
        holds: bool,
    }
}

view! {
    /// What saving the config would change, counted over the cards polled now.
    struct DryRun from admin::DryRun {
        /// Live cards with polling enabled (card and device).
        polled_cards: u64,
        /// Cards that would match this config.
        would_match: u64,
        /// Cards whose interval of at least one task type would change.
        would_change_interval: u64,
        /// Cards whose set of scheduled task types would change (queue membership).
        would_change_queues: u64,
        /// Cards that match no config now and would match one.
        newly_matched: u64,
        /// Cards that match a config now and would match none.
        newly_unmatched: u64,
    }
}
