ALTER TABLE tb_iot_card DROP COLUMN usage_reported_at;
