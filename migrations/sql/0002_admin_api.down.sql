DROP INDEX IF EXISTS idx_iot_card_msisdn;
DROP INDEX IF EXISTS idx_iot_card_iccid_prefix;
DROP TABLE IF EXISTS tb_admin_audit_log;
UPDATE tb_api_key SET revoked_at = now() WHERE role = 'operator' AND revoked_at IS NULL;
UPDATE tb_api_key SET role = 'viewer' WHERE role = 'operator';
ALTER TABLE tb_api_key DROP CONSTRAINT IF EXISTS tb_api_key_role_check;
ALTER TABLE tb_api_key ADD CONSTRAINT tb_api_key_role_check CHECK (role IN ('admin', 'viewer'));
