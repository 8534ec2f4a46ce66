-- Carrier record sync (Control Center's Search Devices since a watermark, 1NCE's SIM list):
-- where each carrier's sync stands. The watermark is the start of the last complete round; a
-- round in progress keeps its start and the next page to read, so a node killed mid-round
-- resumes it with the same `since` and the watermark moves only after the last page's effects
-- are written.
CREATE TABLE tb_carrier_sync (
    carrier_id       BIGINT PRIMARY KEY,
    watermark        TIMESTAMPTZ,
    round_started_at TIMESTAMPTZ,
    next_page        INTEGER CHECK (next_page >= 1),
    rounds           BIGINT NOT NULL DEFAULT 0 CHECK (rounds >= 0),
    completed_at     TIMESTAMPTZ,
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK ((round_started_at IS NULL) = (next_page IS NULL))
);
