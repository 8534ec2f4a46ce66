//! The hand-written statements of the card store.

/// The initializer's scan. A card counts when its own flag is on and its device (if any) has
/// its flag on too. A card whose `device_id` points at a soft-deleted device row (or, impossible
/// under the foreign key, a missing one) counts as standalone and enabled: deleting a device
/// unbinds its cards anyway, and silently dropping cards from polling is the worse failure.
///
/// This is the LEFT JOIN of the specification written as `device_id IS NULL OR NOT EXISTS
/// (live device with the flag off)`. Inside an `OR` the subquery stays a filter instead of
/// becoming a hash join, so the plan is an index-only scan of `idx_iot_card_polling` in id
/// order that stops after `LIMIT` rows, with no sort; PostgreSQL hashes the (small) set of
/// disabled devices once, or probes `tb_device_pkey` per bound card when that set is large.
/// The join form sorted the whole remaining table on every page (measured 2.5x slower at 250K
/// cards, and worse as the fleet grows).
///
/// The page comes back as one row of column arrays (`array_agg`) rather than 100K rows: the
/// per-row protocol and decoding cost on the client was most of the time (3-4x end to end).
pub(crate) const PAGE_POLLING_ENABLED: &str = r#"
SELECT array_agg(id) AS ids, array_agg(carrier_id) AS carriers, array_agg(industry) AS industry,
       array_agg(real_name_status) AS real_name, array_agg(network_status) AS network
FROM (
    SELECT c.id, c.carrier_id, c.card_category = 'industry' AS industry, c.real_name_status,
           c.network_status
    FROM tb_iot_card c
    WHERE c.enable_polling AND c.deleted_at IS NULL AND c.id > $1
      AND (c.device_id IS NULL OR NOT EXISTS (
            SELECT 1 FROM tb_device d
            WHERE d.id = c.device_id AND d.deleted_at IS NULL AND NOT d.enable_polling))
    ORDER BY c.id
    LIMIT $2
) page
"#;

/// Session settings for the scan, local to its transaction. The planner's cost for the
/// per-row alternative of the subquery crosses `jit_above_cost`, and JIT compilation alone
/// costs more than the whole page (measured 70 ms -> 220 ms per 100K rows). A custom plan per
/// call keeps the `LIMIT` and the key visible to the planner when the statement is cached.
pub(crate) const SCAN_SETTINGS: &str =
    "SET LOCAL jit = off; SET LOCAL plan_cache_mode = force_custom_plan";

pub(crate) const COUNT_POLLING_ENABLED: &str = r#"
SELECT count(*) AS n
FROM tb_iot_card c
WHERE c.enable_polling AND c.deleted_at IS NULL
  AND (c.device_id IS NULL OR NOT EXISTS (
        SELECT 1 FROM tb_device d
        WHERE d.id = c.device_id AND d.deleted_at IS NULL AND NOT d.enable_polling))
"#;

pub(crate) const SET_NETWORK_STATE: &str = r#"
UPDATE tb_iot_card SET network_status = $2, stop_reason = $3, updated_at = now()
WHERE id = $1 AND deleted_at IS NULL
"#;

/// Which of the given ids are cards the initializer's scan would yield (same predicate as
/// [`PAGE_POLLING_ENABLED`]): `cmp-worker check` asks this for each batch of queue members.
pub(crate) const POLLING_ENABLED_AMONG: &str = r#"
SELECT array_agg(c.id) AS ids
FROM tb_iot_card c
WHERE c.id = ANY($1) AND c.enable_polling AND c.deleted_at IS NULL
  AND (c.device_id IS NULL OR NOT EXISTS (
        SELECT 1 FROM tb_device d
        WHERE d.id = c.device_id AND d.deleted_at IS NULL AND NOT d.enable_polling))
"#;
