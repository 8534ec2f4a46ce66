//! The one place where database errors become [`StoreError`]s.

use domain::{Cause, StoreError};
use sea_orm::{DbErr, RuntimeErr, sqlx};

/// Unique constraints and indexes of the schema and the column each one protects. A conflict
/// names this column, so the API can answer 409 with the field.
const UNIQUE_FIELDS: &[(&str, &str)] = &[
    ("uq_iot_card_iccid", "iccid"),
    ("uq_device_device_no", "device_no"),
    ("uq_package_usage_card_external", "external_id"),
    ("uq_package_usage_device_external", "external_id"),
    ("uq_polling_config_name", "name"),
    ("uq_data_cleanup_config_table", "table_name"),
    ("uq_api_key_hash", "key_hash"),
    ("tb_carrier_pkey", "carrier_id"),
];

/// Maps a sea-orm error: unique violation -> `Conflict { field }`; foreign-key, check,
/// not-null and data exceptions (bad value, too long) -> `Invalid`; anything else, including
/// connection and pool errors -> `Database`. Public for code that runs its own SQL on the
/// same pool (the benchmarks, test fixtures) and wants the same classification.
pub fn db_err(e: DbErr) -> StoreError {
    if let DbErr::Exec(RuntimeErr::SqlxError(inner)) | DbErr::Query(RuntimeErr::SqlxError(inner)) =
        &e
        && let sqlx::Error::Database(db) = inner.as_ref()
    {
        let code = db.code().unwrap_or_default().into_owned();
        let message = db.message().to_owned();
        if code == "23505" {
            let detail = db
                .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
                .and_then(|pg| pg.detail().map(str::to_owned));
            return StoreError::Conflict {
                field: conflict_field(db.constraint(), detail.as_deref()),
                message,
            };
        }
        // 23xxx integrity (FK 23503, check 23514, not null 23502), 22xxx data exceptions
        // (invalid text, value too long, numeric out of range), 21000 (a row hit twice by one
        // ON CONFLICT DO UPDATE).
        if code.starts_with("23") || code.starts_with("22") || code == "21000" {
            return StoreError::Invalid(message);
        }
        return StoreError::Database(Cause::new(DatabaseRefused {
            code,
            message,
            source: e,
        }));
    }
    match e {
        DbErr::Type(m) | DbErr::Json(m) => StoreError::Invalid(m),
        DbErr::TryIntoErr { .. } => StoreError::Invalid(e.to_string()),
        other => StoreError::Database(Cause::new(other)),
    }
}

/// PostgreSQL refused a statement with an SQLSTATE none of the other kinds cover: shown as
/// `code: message`, the driver's error underneath.
#[derive(Debug, thiserror::Error)]
#[error("{code}: {message}")]
pub struct DatabaseRefused {
    /// The SQLSTATE (`40P01` deadlock, `40001` serialization failure, ...).
    pub code: String,
    pub message: String,
    #[source]
    source: DbErr,
}

/// The SQLSTATE of a [`StoreError::Database`] that PostgreSQL answered, if it was one.
pub(crate) fn sqlstate(error: &StoreError) -> Option<&str> {
    match error {
        StoreError::Database(cause) => cause
            .downcast_ref::<DatabaseRefused>()
            .map(|refused| refused.code.as_str()),
        _ => None,
    }
}

/// The column a unique violation is about: from the constraint name when it is one of ours,
/// else from PostgreSQL's detail (`Key (col)=(value) already exists.`), else the constraint
/// name itself.
fn conflict_field(constraint: Option<&str>, detail: Option<&str>) -> String {
    if let Some(c) = constraint {
        if let Some((_, field)) = UNIQUE_FIELDS.iter().find(|(name, _)| *name == c) {
            return (*field).to_owned();
        }
        if c.ends_with("_pkey") {
            return "id".to_owned();
        }
    }
    let from_detail = detail.and_then(|d| {
        let start = d.find("Key (")? + "Key (".len();
        let end = start + d[start..].find(")=")?;
        // A composite key names its last column: the one the caller chose (e.g. external_id).
        d[start..end].rsplit(", ").next().map(str::to_owned)
    });
    from_detail
        .or_else(|| constraint.map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// A value read back from the database that the domain cannot represent.
pub(crate) fn bad_column(column: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Invalid(format!("{column}: {e}"))
}

pub(crate) fn not_found(entity: &'static str, id: impl ToString) -> StoreError {
    StoreError::NotFound {
        entity,
        id: id.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_from_constraint_or_detail() {
        assert_eq!(conflict_field(Some("uq_iot_card_iccid"), None), "iccid");
        assert_eq!(conflict_field(Some("tb_device_pkey"), None), "id");
        assert_eq!(
            conflict_field(
                Some("uq_other"),
                Some("Key (iot_card_id, external_id)=(1, x) already exists.")
            ),
            "external_id"
        );
        assert_eq!(conflict_field(Some("uq_other"), None), "uq_other");
        assert_eq!(conflict_field(None, None), "unknown");
    }
}
