ALTER TABLE tb_iot_card DROP COLUMN usage_recorded_at;
