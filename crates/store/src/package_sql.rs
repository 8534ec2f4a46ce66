//! The hand-written statements of the package store.

use domain::PackageOwner;

/// One statement in its two forms: for a card owner and for a device owner (the owner column
/// differs, nothing else).
pub(crate) struct OwnerSql {
    card: &'static str,
    device: &'static str,
}

impl OwnerSql {
    /// The form for `owner` and the owner's id (the statement's `$1`).
    pub(crate) fn pick(&self, owner: PackageOwner) -> (&'static str, i64) {
        match owner {
            PackageOwner::Card(c) => (self.card, c.get()),
            PackageOwner::Device(d) => (self.device, d.get()),
        }
    }
}

/// The same statement for a card owner and a device owner: the column differs, nothing else.
/// Built with `concat!` so both texts are static.
macro_rules! lock_valid_sql {
    ($owner:literal) => {
        concat!(
            "SELECT * FROM tb_package_usage WHERE ",
            $owner,
            " = $1 AND status = 'active' \
             AND (activated_at IS NULL OR activated_at <= $2) \
             AND (expires_at IS NULL OR expires_at > $2) \
             ORDER BY expires_at NULLS LAST, id FOR UPDATE"
        )
    };
}

/// Activation from `$now` on the calendar of the zone `$tz` (`CMP_TIMEZONE`, a text
/// parameter): the package runs for the product's `duration_days` local days, else the span
/// the row already carries (`expires_at - activated_at`), else 30 days (a package without a
/// product and without a window, e.g. one reported by the carrier). A monthly package without
/// a reset date gets its first reset one local month after `$now` (PostgreSQL clamps
/// `timestamp + 1 month` to the month's end, which is `domain::calendar::add_months_anchored`
/// for the first month) and its anchor, the local day of `$now`. Used by both activation paths.
macro_rules! activation_set_sql {
    ($now:literal, $tz:literal) => {
        concat!(
            "status = 'active', activated_at = ",
            $now,
            ", expires_at = ((",
            $now,
            " AT TIME ZONE ",
            $tz,
            ") + COALESCE((SELECT make_interval(days => pk.duration_days) FROM tb_package pk \
                            WHERE pk.id = u.package_id), \
                           u.expires_at - u.activated_at, interval '30 days')) AT TIME ZONE ",
            $tz,
            ", next_reset_at = CASE WHEN u.reset_cycle = 'monthly' \
                                  THEN COALESCE(u.next_reset_at, ((",
            $now,
            " AT TIME ZONE ",
            $tz,
            ") + interval '1 month') AT TIME ZONE ",
            $tz,
            ") ELSE u.next_reset_at END, \
             reset_anchor_day = CASE WHEN u.reset_cycle = 'monthly' AND u.next_reset_at IS NULL \
                                     THEN EXTRACT(DAY FROM ",
            $now,
            " AT TIME ZONE ",
            $tz,
            ")::smallint ELSE u.reset_anchor_day END, \
             updated_at = ",
            $now
        )
    };
}

macro_rules! activate_on_realname_sql {
    ($owner:literal) => {
        concat!(
            "UPDATE tb_package_usage u SET ",
            activation_set_sql!("$2", "$3"),
            " WHERE u.",
            $owner,
            " = $1 AND u.status = 'pending' AND u.activate_on_realname"
        )
    };
}

pub(crate) const ADD_USED: &str = r#"
UPDATE tb_package_usage p SET used_mb = p.used_mb + v.add_mb, updated_at = $3
FROM UNNEST($1::bigint[], $2::numeric[]) AS v(id, add_mb)
WHERE p.id = v.id
"#;

/// Expiry then activation of one batch, one statement (so one transaction and one
/// snapshot): at most `$3` due packages (`$2` is the zone of the activation calendar). The
/// snapshot still shows the rows `expired` just changed as active, but with `expires_at <=
/// now`, so they do not count as valid in `orphans`. Only owners touched by this expiry are
/// considered for activation ("left without a valid package"). The activation re-checks
/// `status = 'pending'` so a package activated concurrently (first real-name) is not
/// activated twice. Every row carries `n`, the number of packages expired by the batch.
pub(crate) const EXPIRE_AND_ACTIVATE: &str = concat!(
    r#"
WITH due AS (
    SELECT id FROM tb_package_usage
    WHERE status = 'active' AND expires_at <= $1
    ORDER BY expires_at, id
    LIMIT $3
    FOR UPDATE
),
expired AS (
    UPDATE tb_package_usage p
    SET status = 'expired', updated_at = $1
    FROM due WHERE p.id = due.id
    RETURNING p.iot_card_id, p.device_id
),
owners AS (
    SELECT DISTINCT iot_card_id, device_id FROM expired
),
orphans AS (
    SELECT o.iot_card_id, o.device_id FROM owners o
    WHERE NOT EXISTS (
        SELECT 1 FROM tb_package_usage v
        WHERE (v.iot_card_id = o.iot_card_id OR v.device_id = o.device_id)
          AND v.status = 'active'
          AND (v.activated_at IS NULL OR v.activated_at <= $1)
          AND (v.expires_at IS NULL OR v.expires_at > $1)
    )
),
next AS (
    SELECT n.id FROM orphans o
    CROSS JOIN LATERAL (
        SELECT p.id FROM tb_package_usage p
        WHERE (p.iot_card_id = o.iot_card_id OR p.device_id = o.device_id)
          AND p.status = 'pending' AND NOT p.activate_on_realname
        ORDER BY p.created_at, p.id
        LIMIT 1
    ) n
),
activated AS (
    UPDATE tb_package_usage u SET "#,
    activation_set_sql!("$1", "$2"),
    r#"
    FROM next WHERE u.id = next.id AND u.status = 'pending'
    RETURNING u.iot_card_id, u.device_id
),
touched AS (
    SELECT iot_card_id, device_id FROM owners
    UNION
    SELECT iot_card_id, device_id FROM activated
)
SELECT (SELECT count(*) FROM expired) AS n, iot_card_id, device_id FROM touched
"#
);

/// The due monthly packages of one reset batch, locked until the batch commits: at most `$2`,
/// oldest due first. Their next reset is computed in Rust (`domain::calendar`).
pub(crate) const LOCK_DUE_RESETS: &str = r#"
SELECT id, iot_card_id, device_id, next_reset_at, reset_anchor_day
FROM tb_package_usage
WHERE reset_cycle = 'monthly' AND status = 'active' AND next_reset_at <= $1
ORDER BY next_reset_at, id
LIMIT $2
FOR UPDATE
"#;

/// Applies one reset batch: `used_mb = 0`, the next reset and the anchor, per package.
pub(crate) const APPLY_RESETS: &str = r#"
UPDATE tb_package_usage u
SET used_mb = 0, next_reset_at = v.next_reset_at, reset_anchor_day = v.anchor, updated_at = $4
FROM UNNEST($1::bigint[], $2::timestamptz[], $3::smallint[]) AS v(id, next_reset_at, anchor)
WHERE u.id = v.id
"#;

pub(crate) const LOCK_VALID: OwnerSql = OwnerSql {
    card: lock_valid_sql!("iot_card_id"),
    device: lock_valid_sql!("device_id"),
};

pub(crate) const ACTIVATE_ON_REALNAME: OwnerSql = OwnerSql {
    card: activate_on_realname_sql!("iot_card_id"),
    device: activate_on_realname_sql!("device_id"),
};
