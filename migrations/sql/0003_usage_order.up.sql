-- When a usage poll last wrote the card's counters (the worker's clock). A usage write
-- applies the carrier's report only if the carrier was asked after that: two polls of one card
-- that overlap are a race the second writer has lost, and its report is left for the next poll
-- to count. Without it the loser's answer could pass for a carrier correction, lower the
-- baseline, and have the next poll count the same megabytes again.
ALTER TABLE tb_iot_card ADD COLUMN usage_recorded_at TIMESTAMPTZ;
