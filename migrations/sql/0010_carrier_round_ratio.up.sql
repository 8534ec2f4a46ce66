-- Carrier budget: the alert metric `carrier_round_ratio` (the worst carrier's
-- achievable round time over its configured interval, from the `carrier_budget` job's figures).
ALTER TABLE tb_polling_alert_rule DROP CONSTRAINT IF EXISTS ck_alert_rule_metric;
ALTER TABLE tb_polling_alert_rule
    ADD CONSTRAINT ck_alert_rule_metric CHECK (metric IN (
        'due_backlog', 'oldest_due_age', 'failure_rate', 'gateway_error_rate',
        'gateway_throttle_rate', 'stops_per_minute', 'queue_depth', 'initializer_failed',
        'carrier_round_ratio'))
    NOT VALID;
