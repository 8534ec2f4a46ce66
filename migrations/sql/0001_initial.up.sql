-- The polling core's schema. Megabytes are NUMERIC (exact), never floating point.

CREATE TABLE tb_device (
    id              BIGSERIAL PRIMARY KEY,
    device_no       VARCHAR(64) NOT NULL,
    enable_polling  BOOLEAN NOT NULL DEFAULT TRUE,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    deleted_at      TIMESTAMPTZ
);
CREATE UNIQUE INDEX uq_device_device_no ON tb_device (device_no) WHERE deleted_at IS NULL;

CREATE TABLE tb_iot_card (
    id                        BIGSERIAL PRIMARY KEY,
    iccid                     VARCHAR(32) NOT NULL CHECK (iccid <> ''),
    msisdn                    VARCHAR(32),
    carrier_id                BIGINT NOT NULL,
    card_category             VARCHAR(16) NOT NULL DEFAULT 'normal'
                              CHECK (card_category IN ('normal', 'industry')),
    status                    SMALLINT NOT NULL DEFAULT 1,
    real_name_status          SMALLINT NOT NULL DEFAULT 0 CHECK (real_name_status IN (0, 1)),
    network_status            SMALLINT NOT NULL DEFAULT 1 CHECK (network_status IN (0, 1)),
    stop_reason               VARCHAR(32) NOT NULL DEFAULT ''
                              CHECK (stop_reason IN ('', 'not_realname', 'no_package',
                                                     'traffic_exhausted', 'protect', 'manual')),
    enable_polling            BOOLEAN NOT NULL DEFAULT TRUE,
    device_id                 BIGINT REFERENCES tb_device (id),
    data_usage_mb             NUMERIC NOT NULL DEFAULT 0,
    current_month_usage_mb    NUMERIC NOT NULL DEFAULT 0,
    current_month_start_date  DATE,
    last_gateway_total_mb     NUMERIC NOT NULL DEFAULT 0,
    last_month_total_mb       NUMERIC NOT NULL DEFAULT 0,
    created_at                TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at                TIMESTAMPTZ NOT NULL DEFAULT now(),
    deleted_at                TIMESTAMPTZ
);
CREATE UNIQUE INDEX uq_iot_card_iccid ON tb_iot_card (iccid) WHERE deleted_at IS NULL;
CREATE INDEX idx_iot_card_device ON tb_iot_card (device_id) WHERE device_id IS NOT NULL;
-- The initializer's keyset scan reads only this index (id order, matching fields included).
CREATE INDEX idx_iot_card_polling ON tb_iot_card (id)
    INCLUDE (carrier_id, card_category, real_name_status, network_status, device_id)
    WHERE enable_polling AND deleted_at IS NULL;

CREATE TABLE tb_package (
    id             BIGSERIAL PRIMARY KEY,
    name           VARCHAR(128) NOT NULL,
    data_limit_mb  NUMERIC CHECK (data_limit_mb IS NULL OR data_limit_mb >= 0),
    virtual_ratio  NUMERIC NOT NULL DEFAULT 1 CHECK (virtual_ratio >= 1),
    duration_days  INTEGER NOT NULL CHECK (duration_days > 0),
    reset_cycle    VARCHAR(16) NOT NULL DEFAULT 'none' CHECK (reset_cycle IN ('none', 'monthly')),
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE tb_package_usage (
    id                    BIGSERIAL PRIMARY KEY,
    iot_card_id           BIGINT REFERENCES tb_iot_card (id),
    device_id             BIGINT REFERENCES tb_device (id),
    package_id            BIGINT REFERENCES tb_package (id),
    external_id           VARCHAR(64),
    status                VARCHAR(16) NOT NULL DEFAULT 'pending'
                          CHECK (status IN ('pending', 'active', 'expired', 'cancelled')),
    data_limit_mb         NUMERIC CHECK (data_limit_mb IS NULL OR data_limit_mb >= 0),
    virtual_ratio         NUMERIC NOT NULL DEFAULT 1 CHECK (virtual_ratio >= 1),
    used_mb               NUMERIC NOT NULL DEFAULT 0 CHECK (used_mb >= 0),
    activate_on_realname  BOOLEAN NOT NULL DEFAULT FALSE,
    activated_at          TIMESTAMPTZ,
    expires_at            TIMESTAMPTZ,
    reset_cycle           VARCHAR(16) NOT NULL DEFAULT 'none' CHECK (reset_cycle IN ('none', 'monthly')),
    next_reset_at         TIMESTAMPTZ,
    created_at            TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at            TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- A package covers exactly one card or one device.
    CONSTRAINT ck_package_usage_owner CHECK ((iot_card_id IS NULL) <> (device_id IS NULL)),
    CONSTRAINT ck_package_usage_window CHECK (expires_at IS NULL OR activated_at IS NULL
                                              OR activated_at <= expires_at)
);
CREATE INDEX idx_package_usage_card ON tb_package_usage (iot_card_id, status)
    WHERE iot_card_id IS NOT NULL;
CREATE INDEX idx_package_usage_device ON tb_package_usage (device_id, status)
    WHERE device_id IS NOT NULL;
CREATE INDEX idx_package_usage_expiry ON tb_package_usage (expires_at) WHERE status = 'active';
CREATE INDEX idx_package_usage_pending ON tb_package_usage (created_at, id) WHERE status = 'pending';
CREATE INDEX idx_package_usage_reset ON tb_package_usage (next_reset_at)
    WHERE reset_cycle = 'monthly' AND status = 'active';
CREATE UNIQUE INDEX uq_package_usage_card_external ON tb_package_usage (iot_card_id, external_id)
    WHERE iot_card_id IS NOT NULL AND external_id IS NOT NULL;
CREATE UNIQUE INDEX uq_package_usage_device_external ON tb_package_usage (device_id, external_id)
    WHERE device_id IS NOT NULL AND external_id IS NOT NULL;

CREATE TABLE tb_polling_config (
    id                      BIGSERIAL PRIMARY KEY,
    name                    VARCHAR(128) NOT NULL,
    priority                INTEGER NOT NULL DEFAULT 100,
    enabled                 BOOLEAN NOT NULL DEFAULT TRUE,
    card_condition          VARCHAR(16)
                            CHECK (card_condition IN ('not_realname', 'realname', 'online', 'stopped')),
    card_category           VARCHAR(16) CHECK (card_category IN ('normal', 'industry')),
    carrier_id              BIGINT,
    realname_interval_secs  INTEGER CHECK (realname_interval_secs > 0),
    carddata_interval_secs  INTEGER CHECK (carddata_interval_secs > 0),
    package_interval_secs   INTEGER CHECK (package_interval_secs > 0),
    protect_interval_secs   INTEGER CHECK (protect_interval_secs > 0),
    created_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT uq_polling_config_name UNIQUE (name)
);

-- Usage history, partitioned by month. The default partition catches any month whose
-- partition was not created ahead, so an insert never fails for lack of a partition.
CREATE TABLE tb_data_usage_record (
    id              BIGSERIAL,
    iot_card_id     BIGINT NOT NULL,
    delta_mb        NUMERIC NOT NULL,
    month_total_mb  NUMERIC NOT NULL,
    recorded_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (id, recorded_at)
) PARTITION BY RANGE (recorded_at);
CREATE TABLE tb_data_usage_record_default PARTITION OF tb_data_usage_record DEFAULT;
CREATE INDEX idx_data_usage_record_card ON tb_data_usage_record (iot_card_id, recorded_at);

-- Creates the monthly partitions of tb_data_usage_record from the month of `from_day` for
-- `months` months. Idempotent; a month whose rows already sit in the default partition is
-- skipped (they stay queryable there). Returns the number of partitions created.
CREATE FUNCTION cmp_ensure_usage_partitions(from_day DATE, months INTEGER) RETURNS INTEGER
LANGUAGE plpgsql AS $$
DECLARE
    m DATE := date_trunc('month', from_day)::date;
    created INTEGER := 0;
    name TEXT;
BEGIN
    FOR i IN 0 .. months - 1 LOOP
        name := 'tb_data_usage_record_' || to_char(m, 'YYYYMM');
        IF to_regclass(name) IS NULL THEN
            BEGIN
                EXECUTE format(
                    'CREATE TABLE %I PARTITION OF tb_data_usage_record FOR VALUES FROM (%L) TO (%L)',
                    name, m, (m + INTERVAL '1 month')::date);
                created := created + 1;
            EXCEPTION WHEN check_violation THEN
                RAISE NOTICE 'rows for % are in the default partition; skipped', name;
            END;
        END IF;
        m := (m + INTERVAL '1 month')::date;
    END LOOP;
    RETURN created;
END
$$;
SELECT cmp_ensure_usage_partitions((now() - INTERVAL '2 months')::date, 15);

CREATE TABLE tb_card_state_log (
    id               BIGSERIAL PRIMARY KEY,
    iot_card_id      BIGINT NOT NULL,
    from_status      SMALLINT NOT NULL CHECK (from_status IN (0, 1)),
    to_status        SMALLINT NOT NULL CHECK (to_status IN (0, 1)),
    stop_reason      VARCHAR(32) NOT NULL DEFAULT '',
    trigger          VARCHAR(64) NOT NULL,
    gateway_outcome  VARCHAR(32) NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX idx_card_state_log_card ON tb_card_state_log (iot_card_id, created_at DESC);

CREATE TABLE tb_polling_alert_rule (
    id             BIGSERIAL PRIMARY KEY,
    name           VARCHAR(128) NOT NULL,
    metric         VARCHAR(64) NOT NULL,
    task_type      VARCHAR(16) CHECK (task_type IN ('realname', 'carddata', 'package', 'protect')),
    operator       VARCHAR(2) NOT NULL CHECK (operator IN ('>', '>=', '<', '<=')),
    threshold      NUMERIC NOT NULL,
    window_secs    INTEGER NOT NULL DEFAULT 300 CHECK (window_secs > 0),
    enabled        BOOLEAN NOT NULL DEFAULT TRUE,
    webhook_url    VARCHAR(512),
    cooldown_secs  INTEGER NOT NULL DEFAULT 600 CHECK (cooldown_secs >= 0),
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE tb_polling_alert_history (
    id           BIGSERIAL PRIMARY KEY,
    rule_id      BIGINT NOT NULL REFERENCES tb_polling_alert_rule (id) ON DELETE CASCADE,
    value        NUMERIC NOT NULL,
    fired_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    resolved_at  TIMESTAMPTZ,
    notified     BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX idx_alert_history_rule ON tb_polling_alert_history (rule_id, fired_at DESC);

CREATE TABLE tb_data_cleanup_config (
    id              BIGSERIAL PRIMARY KEY,
    table_name      VARCHAR(64) NOT NULL
                    CHECK (table_name IN ('tb_data_usage_record', 'tb_card_state_log',
                                          'tb_polling_alert_history', 'tb_data_cleanup_log',
                                          'tb_polling_manual_trigger_log')),
    retention_days  INTEGER NOT NULL CHECK (retention_days > 0),
    enabled         BOOLEAN NOT NULL DEFAULT TRUE,
    batch_size      INTEGER NOT NULL DEFAULT 10000 CHECK (batch_size BETWEEN 1 AND 100000),
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    CONSTRAINT uq_data_cleanup_config_table UNIQUE (table_name)
);

CREATE TABLE tb_data_cleanup_log (
    id            BIGSERIAL PRIMARY KEY,
    table_name    VARCHAR(64) NOT NULL,
    rows_deleted  BIGINT NOT NULL DEFAULT 0,
    started_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at   TIMESTAMPTZ,
    status        VARCHAR(16) NOT NULL DEFAULT 'running'
                  CHECK (status IN ('running', 'completed', 'failed')),
    error         TEXT
);

CREATE TABLE tb_polling_manual_trigger_log (
    id          BIGSERIAL PRIMARY KEY,
    who         VARCHAR(128) NOT NULL,
    scope       JSONB NOT NULL,
    task_types  TEXT[] NOT NULL,
    count       BIGINT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE tb_api_key (
    id            BIGSERIAL PRIMARY KEY,
    name          VARCHAR(128) NOT NULL,
    role          VARCHAR(16) NOT NULL CHECK (role IN ('admin', 'viewer')),
    key_hash      VARCHAR(128) NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    last_used_at  TIMESTAMPTZ,
    revoked_at    TIMESTAMPTZ,
    CONSTRAINT uq_api_key_hash UNIQUE (key_hash)
);
