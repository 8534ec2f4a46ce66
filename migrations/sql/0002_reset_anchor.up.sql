-- The day of the month (1..31) a monthly package resets on, on the deployment's calendar
-- (CMP_TIMEZONE). Each reset is computed from it, clamped to the month's length, so a package
-- anchored on the 31st resets Jan 31, Feb 28, Mar 31, Apr 30 instead of drifting to the 28th.
-- NULL for rows written before this column: the next reset takes the local day of their
-- current next_reset_at and records it.
ALTER TABLE tb_package_usage ADD COLUMN reset_anchor_day SMALLINT
    CONSTRAINT ck_package_usage_anchor CHECK (reset_anchor_day IS NULL OR reset_anchor_day BETWEEN 1 AND 31);
