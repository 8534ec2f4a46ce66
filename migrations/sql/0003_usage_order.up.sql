-- When the usage report the card's counters follow was received from the carrier. A usage
-- write applies a report only if it was received after that one: with two polls of one card at
-- once, a slow answer overtaken by a newer one would otherwise look like a carrier correction,
-- lower the baseline and have the next poll count the same megabytes again.
ALTER TABLE tb_iot_card ADD COLUMN usage_reported_at TIMESTAMPTZ;
