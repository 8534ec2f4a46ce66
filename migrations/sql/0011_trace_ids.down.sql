ALTER TABLE tb_admin_audit_log DROP COLUMN IF EXISTS trace_id;
ALTER TABLE tb_card_state_log DROP COLUMN IF EXISTS trace_id;
