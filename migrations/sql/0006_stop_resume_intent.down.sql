-- Rows of the new outcomes do not fit the old reading of the table (one row per change the
-- carrier made): an intent still pending, a refused call and an interrupted one are dropped.
DROP INDEX IF EXISTS uq_card_state_log_pending;
ALTER TABLE tb_card_state_log DROP CONSTRAINT IF EXISTS ck_card_state_log_outcome;
DELETE FROM tb_card_state_log WHERE gateway_outcome IN ('pending', 'failed', 'interrupted');
