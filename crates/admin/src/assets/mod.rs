//! The assets an operator manages: cards (one, bulk import, operator stop/start, platform
//! status), devices, packages and their purchases, manual polling triggers, asset polling
//! control, a card's month of usage, and [`Evaluation`](evaluation::Evaluation), the
//! stop/resume decision their writes answer with.

pub(crate) mod cards;
pub(crate) mod devices;
pub(crate) mod evaluation;
pub(crate) mod import;
pub(crate) mod manual;
pub(crate) mod packages;
pub(crate) mod polling_control;
pub(crate) mod usage_month;
