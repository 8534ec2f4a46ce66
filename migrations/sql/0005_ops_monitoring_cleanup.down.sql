DROP TABLE IF EXISTS tb_polling_metrics_history;
DELETE FROM tb_data_cleanup_config WHERE table_name IN ('tb_admin_audit_log', 'tb_polling_metrics_history');
DROP INDEX IF EXISTS idx_data_cleanup_log_run;
DROP INDEX IF EXISTS idx_data_cleanup_log_started;
ALTER TABLE tb_data_cleanup_log DROP COLUMN IF EXISTS run_id;
ALTER TABLE tb_data_cleanup_config DROP CONSTRAINT tb_data_cleanup_config_table_name_check;
ALTER TABLE tb_data_cleanup_config ADD CONSTRAINT tb_data_cleanup_config_table_name_check
    CHECK (table_name IN ('tb_data_usage_record', 'tb_card_state_log', 'tb_polling_alert_history',
                          'tb_data_cleanup_log', 'tb_polling_manual_trigger_log'));
DROP INDEX IF EXISTS idx_manual_trigger_log_created;
DROP INDEX IF EXISTS idx_card_state_log_created;
DROP INDEX IF EXISTS idx_alert_history_fired;
DROP INDEX IF EXISTS idx_alert_history_open;
ALTER TABLE tb_polling_alert_history DROP COLUMN IF EXISTS resolve_notified, DROP COLUMN IF EXISTS notify_error;
ALTER TABLE tb_polling_alert_rule DROP CONSTRAINT IF EXISTS ck_alert_rule_metric;
ALTER TABLE tb_polling_alert_rule DROP COLUMN IF EXISTS webhook_secret, DROP COLUMN IF EXISTS stop_reason;
