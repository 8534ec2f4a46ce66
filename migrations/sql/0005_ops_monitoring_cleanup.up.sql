-- Admin API part 2 (docs/admin-ops.md): what the alert evaluator, data cleanup and the
-- metrics history need. Additive: new columns have defaults, new tables are new.

-- Alert rules: the metric is one of a fixed list (checked for new rows; NOT VALID leaves rows
-- written before this migration alone), `stop_reason` narrows `stops_per_minute`, and every
-- rule has its own secret for the HMAC-SHA256 signature of its webhooks.
ALTER TABLE tb_polling_alert_rule
    ADD COLUMN stop_reason VARCHAR(32)
        CHECK (stop_reason IN ('not_realname', 'no_package', 'traffic_exhausted', 'protect', 'manual')),
    ADD COLUMN webhook_secret VARCHAR(128) NOT NULL
        DEFAULT replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '');
ALTER TABLE tb_polling_alert_rule
    ADD CONSTRAINT ck_alert_rule_metric CHECK (metric IN (
        'due_backlog', 'oldest_due_age', 'failure_rate', 'gateway_error_rate',
        'gateway_throttle_rate', 'stops_per_minute', 'queue_depth', 'initializer_failed'))
    NOT VALID;

-- History: why a webhook failed, and the partial index the evaluator reads open firings by.
ALTER TABLE tb_polling_alert_history
    ADD COLUMN notify_error TEXT,
    ADD COLUMN resolve_notified BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX idx_alert_history_open ON tb_polling_alert_history (rule_id) WHERE resolved_at IS NULL;
CREATE INDEX idx_alert_history_fired ON tb_polling_alert_history (fired_at);

-- Stops per minute by reason read the state log by time; cleanup deletes by time.
CREATE INDEX idx_card_state_log_created ON tb_card_state_log (created_at);
CREATE INDEX idx_manual_trigger_log_created ON tb_polling_manual_trigger_log (created_at);

-- Cleanup: the admin audit table (created by the API migrations) and the metrics history
-- become cleanable; a run groups its log rows under one id.
ALTER TABLE tb_data_cleanup_config DROP CONSTRAINT tb_data_cleanup_config_table_name_check;
ALTER TABLE tb_data_cleanup_config ADD CONSTRAINT tb_data_cleanup_config_table_name_check
    CHECK (table_name IN ('tb_data_usage_record', 'tb_card_state_log', 'tb_polling_alert_history',
                          'tb_data_cleanup_log', 'tb_polling_manual_trigger_log',
                          'tb_admin_audit_log', 'tb_polling_metrics_history'));
ALTER TABLE tb_data_cleanup_log ADD COLUMN run_id VARCHAR(36);
CREATE INDEX idx_data_cleanup_log_started ON tb_data_cleanup_log (started_at);
CREATE INDEX idx_data_cleanup_log_run ON tb_data_cleanup_log (run_id);

-- Defaults: usage and the metrics history 13 months (a year-over-year comparison of billing
-- cycles), the audit log a year, operational logs 90 to 180 days.
INSERT INTO tb_data_cleanup_config (table_name, retention_days, enabled, batch_size) VALUES
    ('tb_data_usage_record', 400, TRUE, 10000),
    ('tb_card_state_log', 180, TRUE, 10000),
    ('tb_polling_alert_history', 90, TRUE, 10000),
    ('tb_polling_manual_trigger_log', 90, TRUE, 10000),
    ('tb_data_cleanup_log', 90, TRUE, 10000),
    ('tb_admin_audit_log', 365, TRUE, 10000),
    ('tb_polling_metrics_history', 400, TRUE, 10000)
ON CONFLICT (table_name) DO NOTHING;

-- Sampled monitoring figures over time, for the dashboard's charts (1 h .. 13 months) without
-- Prometheus. One row per (resolution, task type, bucket); `task_type = 'all'` rows carry the
-- fleet-wide figures (stops by reason, gateway outcomes). The history job downsamples minute
-- rows into hours and hours into days, and prunes each resolution by age, so the table stays
-- at about 4,300 rows per task type.
CREATE TABLE tb_polling_metrics_history (
    resolution           VARCHAR(8) NOT NULL CHECK (resolution IN ('minute', 'hour', 'day')),
    task_type            VARCHAR(16) NOT NULL
                         CHECK (task_type IN ('realname', 'carddata', 'package', 'protect', 'all')),
    bucket_at            TIMESTAMPTZ NOT NULL,
    polls                BIGINT NOT NULL DEFAULT 0,
    failures             BIGINT NOT NULL DEFAULT 0,
    requeued             BIGINT NOT NULL DEFAULT 0,
    due_backlog          BIGINT NOT NULL DEFAULT 0,
    oldest_due_age_secs  BIGINT NOT NULL DEFAULT 0,
    depth                BIGINT NOT NULL DEFAULT 0,
    gateway_calls        BIGINT NOT NULL DEFAULT 0,
    gateway_errors       BIGINT NOT NULL DEFAULT 0,
    gateway_throttles    BIGINT NOT NULL DEFAULT 0,
    stops                JSONB NOT NULL DEFAULT '{}'::jsonb,
    PRIMARY KEY (resolution, task_type, bucket_at)
);
CREATE INDEX idx_metrics_history_bucket ON tb_polling_metrics_history (bucket_at);
