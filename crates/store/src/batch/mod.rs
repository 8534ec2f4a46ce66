//! The group-committed writers of the polls: concurrent `record_usage`, `set_real_name` and
//! `upsert_carrier_packages` calls go out as one transaction per batch (see the `batch`
//! crate). `group_commit` holds what the three share: the retry of a lost lock conflict and
//! the one-error-per-poll answer of a batch that wrote nothing.

pub(crate) mod group_commit;
pub(crate) mod package;
pub(crate) mod realname;
pub(crate) mod usage;
