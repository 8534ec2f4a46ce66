-- Issue 31, traces: the OpenTelemetry trace of the decision that wrote a state-log row
-- (32 hex digits), so an operator goes from "why was this card stopped?" to the spans of the
-- stop and its carrier call. NULL when traces are off or the row predates them. Nullable and
-- without a default: adding it rewrites nothing.
ALTER TABLE tb_card_state_log ADD COLUMN IF NOT EXISTS trace_id TEXT;
