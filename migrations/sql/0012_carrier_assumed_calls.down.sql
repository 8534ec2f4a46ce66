ALTER TABLE tb_carrier DROP COLUMN IF EXISTS assumed_calls;
