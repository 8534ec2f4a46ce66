//! Running the platform: monitoring and the metrics history, the per-minute gateway counts they
//! read, the carriers' call budgets against their demand, cluster-wide concurrency, alert rules with their evaluator and webhooks, and data
//! cleanup. These services are plain structs built from their own dependencies (not [`Admin`](crate::Admin)),
//! because the worker runs some of them as periodic jobs; those jobs are built here too
//! (`jobs.rs`), and the worker only registers them.

pub mod alert_metrics;
pub mod alerts;
pub mod budget;
pub mod budget_gauges;
pub mod cleanup;
pub(crate) mod cleanup_run;
pub mod concurrency;
pub mod evaluator;
pub mod gateway_counts;
pub mod history;
pub mod jobs;
pub mod monitoring;
pub mod webhook;
