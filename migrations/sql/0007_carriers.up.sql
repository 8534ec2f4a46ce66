-- Carriers as configuration: which platform a `tb_iot_card.carrier_id` speaks, where, with
-- which credentials and within which budget. Managed through `/api/admin/carriers`; the
-- worker and API processes build one gateway adapter per row. `credentials` holds the
-- protocol's fields as a JSON object of strings; the API never returns it.
CREATE TABLE tb_carrier (
    carrier_id         BIGINT PRIMARY KEY CHECK (carrier_id > 0),
    name               TEXT NOT NULL CHECK (length(btrim(name)) BETWEEN 1 AND 100),
    protocol           TEXT NOT NULL CHECK (protocol IN (
        'cmp-json', 'onelink', 'ctcc-5gcmp', 'control-center', '1nce', 'emnify')),
    base_url           TEXT NOT NULL CHECK (base_url ~ '^https?://' AND length(base_url) <= 500),
    credentials        JSONB NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(credentials) = 'object'),
    -- The bounds of `CarrierLimits::validate`; 0 = no limit for the first two.
    rate_limit_per_sec INT NOT NULL CHECK (rate_limit_per_sec BETWEEN 0 AND 100000),
    max_concurrent     INT NOT NULL CHECK (max_concurrent BETWEEN 0 AND 10000),
    batch_size         INT NOT NULL CHECK (batch_size BETWEEN 1 AND 1000),
    timeout_ms         INT NOT NULL CHECK (timeout_ms BETWEEN 100 AND 120000),
    enabled            BOOLEAN NOT NULL DEFAULT TRUE,
    created_at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at         TIMESTAMPTZ NOT NULL DEFAULT now()
);
