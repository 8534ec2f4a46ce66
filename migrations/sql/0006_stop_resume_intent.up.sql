-- A stop or start is written before the carrier is asked: the state-log row is inserted
-- `pending` (the intent), then turned into `ok` (with the card, in one transaction) when the
-- carrier said yes, or `failed` when it did not. A `pending` row whose holder died (killed,
-- cut off) is found by the next evaluation of the card once it is older than any live call can
-- take, and becomes `interrupted`: the call may or may not have reached the carrier. A reason
-- change without a carrier call is written directly as `not_called`.
ALTER TABLE tb_card_state_log ADD CONSTRAINT ck_card_state_log_outcome
    CHECK (gateway_outcome IN ('ok', 'not_called', 'pending', 'failed', 'interrupted'));

-- At most one call in flight per card, whatever the Redis card lock says: the database is the
-- last guard against two evaluations both asking the carrier (e.g. after Redis lost its keys).
CREATE UNIQUE INDEX uq_card_state_log_pending ON tb_card_state_log (iot_card_id)
    WHERE gateway_outcome = 'pending';
