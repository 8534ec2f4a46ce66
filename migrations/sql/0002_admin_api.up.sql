-- The admin API: the `operator` role, and the audit of writes through the API.

ALTER TABLE tb_api_key DROP CONSTRAINT IF EXISTS tb_api_key_role_check;
ALTER TABLE tb_api_key ADD CONSTRAINT tb_api_key_role_check
    CHECK (role IN ('admin', 'operator', 'viewer'));

-- One row per write through the admin API, refused ones included (their status says so).
CREATE TABLE tb_admin_audit_log (
    id          BIGSERIAL PRIMARY KEY,
    -- NULL when the request carried no valid key (a 401).
    api_key_id  BIGINT,
    key_name    VARCHAR(128),
    method      VARCHAR(8) NOT NULL,
    -- The route template, e.g. /api/admin/cards/{id}/stop.
    route       VARCHAR(256) NOT NULL,
    -- The ids the write was aimed at.
    target      JSONB NOT NULL DEFAULT '{}'::jsonb,
    -- A summary of the body.
    summary     JSONB NOT NULL DEFAULT '{}'::jsonb,
    status      SMALLINT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE INDEX idx_admin_audit_log_created ON tb_admin_audit_log (created_at DESC, id DESC);

-- The card search of the operators: ICCID prefix and MSISDN.
CREATE INDEX idx_iot_card_iccid_prefix ON tb_iot_card (iccid text_pattern_ops) WHERE deleted_at IS NULL;
CREATE INDEX idx_iot_card_msisdn ON tb_iot_card (msisdn) WHERE msisdn IS NOT NULL;
