-- Carriers' push streams (1NCE's and emnify's Data Streamer, `POST /api/carriers/{id}/stream`).
--
-- Megabytes of the card's current month a pushed record counted that the carrier's polled
-- month total has not shown yet: the next polls count only their total's rise beyond them
-- (`domain::apply_month_total`). A constant default: no rewrite of the table.
ALTER TABLE tb_iot_card ADD COLUMN streamed_ahead_mb NUMERIC NOT NULL DEFAULT 0;

-- Every pushed record applied to a card, once: a replay (the carrier resends what it was not
-- sure we took) finds its `(carrier_id, record_id)` here and changes nothing. Written in the
-- transaction of the usage write. `counted_mb` is what the record added to the card's month
-- (0 for a record of a month already closed).
CREATE TABLE tb_carrier_event (
    id          BIGSERIAL PRIMARY KEY,
    carrier_id  BIGINT NOT NULL,
    record_id   VARCHAR(64) NOT NULL CHECK (record_id <> ''),
    iot_card_id BIGINT NOT NULL,
    usage_mb    NUMERIC NOT NULL CHECK (usage_mb >= 0),
    counted_mb  NUMERIC NOT NULL CHECK (counted_mb >= 0),
    ended_at    TIMESTAMPTZ NOT NULL,
    received_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX uq_carrier_event_record ON tb_carrier_event (carrier_id, record_id);
CREATE INDEX idx_carrier_event_received ON tb_carrier_event (received_at);

-- Cleanable: the streams resend for days, not months (emnify's historic replay reaches 20
-- days back), so 60 days of records keep every replay a duplicate.
ALTER TABLE tb_data_cleanup_config DROP CONSTRAINT tb_data_cleanup_config_table_name_check;
ALTER TABLE tb_data_cleanup_config ADD CONSTRAINT tb_data_cleanup_config_table_name_check
    CHECK (table_name IN ('tb_data_usage_record', 'tb_card_state_log', 'tb_polling_alert_history',
                          'tb_data_cleanup_log', 'tb_polling_manual_trigger_log',
                          'tb_admin_audit_log', 'tb_polling_metrics_history',
                          'tb_carrier_event'));
INSERT INTO tb_data_cleanup_config (table_name, retention_days, enabled, batch_size) VALUES
    ('tb_carrier_event', 60, TRUE, 10000)
ON CONFLICT (table_name) DO NOTHING;
