-- An endpoint's extra request headers (often a credential of the receiver's), sealed like its
-- signing secret: AES-256-GCM under the master key, a JSON object of name to value once opened;
-- NULL when it has none. `svc admin rotate-master-key` re-encrypts it (src/ops/master-key.ts).
ALTER TABLE webhook_endpoints ADD COLUMN headers_enc text;

-- An endpoint's ordering: 'subject' sends the deliveries of one subject (a product, an order) one
-- at a time, oldest first (docs/webhooks.md, "Ordering").
ALTER TABLE webhook_endpoints ADD COLUMN ordering text NOT NULL DEFAULT 'none' CHECK (ordering IN ('none', 'subject'));

-- What a delivery is ordered by: its event's subject id when its endpoint orders by subject, written
-- by the fan-out (src/outbox/fanout.ts) and by replays; NULL for every other row, which the claim
-- then never checks. ordering_seq places the ordered rows of one subject in the order they were
-- written: creation times can tie (one millisecond) or run against the order of the changes (a
-- change takes its time before it waits for the row lock of the one before it), an insert cannot.
-- The sequence is drawn only for ordered rows.
ALTER TABLE webhook_deliveries ADD COLUMN ordering_key text COLLATE "C";
ALTER TABLE webhook_deliveries ADD COLUMN ordering_seq bigint;
CREATE SEQUENCE webhook_deliveries_ordering_seq;

-- The claim's check for an older pending delivery of the same endpoint and subject
-- (src/webhooks/engine/claim.ts): only pending rows of ordered endpoints are in it, so the delivery
-- path of every other endpoint writes no entry here.
CREATE INDEX webhook_deliveries_ordering ON webhook_deliveries (endpoint_id, ordering_key, ordering_seq)
  WHERE status = 'pending' AND ordering_key IS NOT NULL;
