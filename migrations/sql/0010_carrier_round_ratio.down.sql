-- The rules of the metric go with it (their firings cascade).
DELETE FROM tb_polling_alert_rule WHERE metric = 'carrier_round_ratio';
ALTER TABLE tb_polling_alert_rule DROP CONSTRAINT IF EXISTS ck_alert_rule_metric;
ALTER TABLE tb_polling_alert_rule
    ADD CONSTRAINT ck_alert_rule_metric CHECK (metric IN (
        'due_backlog', 'oldest_due_age', 'failure_rate', 'gateway_error_rate',
        'gateway_throttle_rate', 'stops_per_minute', 'queue_depth', 'initializer_failed'))
    NOT VALID;
