-- Traces: the OpenTelemetry trace (32 hex digits) of the decision that wrote a
-- state-log row, and of the API request that wrote an audit row, so an operator goes from
-- "why was this card stopped?" or "who did this?" to the spans of the stop, its carrier call,
-- the request. NULL when traces are off or the row predates them. Nullable and without a
-- default: adding them rewrites nothing.
ALTER TABLE tb_card_state_log ADD COLUMN IF NOT EXISTS trace_id TEXT;
ALTER TABLE tb_admin_audit_log ADD COLUMN IF NOT EXISTS trace_id TEXT;
