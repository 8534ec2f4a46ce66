-- The *assumed* calls an operator allows for a carrier: calls no public source shows (its page
-- in `docs/carriers/` marks them). Empty, the default: the adapter makes documented calls only.
-- Names: `realname_batch`, `usage_batch`, `network_status_batch` (`domain::AssumedCall`).
ALTER TABLE tb_carrier
    ADD COLUMN assumed_calls TEXT[] NOT NULL DEFAULT '{}'
        CHECK (assumed_calls <@ ARRAY['realname_batch', 'usage_batch', 'network_status_batch']);
