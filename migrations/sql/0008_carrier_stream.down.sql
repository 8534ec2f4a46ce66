DELETE FROM tb_data_cleanup_config WHERE table_name = 'tb_carrier_event';
ALTER TABLE tb_data_cleanup_config DROP CONSTRAINT tb_data_cleanup_config_table_name_check;
ALTER TABLE tb_data_cleanup_config ADD CONSTRAINT tb_data_cleanup_config_table_name_check
    CHECK (table_name IN ('tb_data_usage_record', 'tb_card_state_log', 'tb_polling_alert_history',
                          'tb_data_cleanup_log', 'tb_polling_manual_trigger_log',
                          'tb_admin_audit_log', 'tb_polling_metrics_history'));
DROP TABLE tb_carrier_event;
ALTER TABLE tb_iot_card DROP COLUMN streamed_ahead_mb;
