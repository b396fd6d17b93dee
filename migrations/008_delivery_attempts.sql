-- Every HTTP attempt of a delivery (spec 3.1: every delivery attempt is logged). A row is written by
-- the very statement that records the attempt's outcome on its delivery (src/webhooks/engine/outcome.ts),
-- so keeping them costs no round trip of its own; the delivery row keeps the latest attempt's facts.
-- `ok` is the attempt's verdict (a 2xx received in full in time), which response_status alone cannot
-- tell (a 200 whose body never finished is a failure).
--
-- No foreign key: a key check per inserted row would cost the delivery path, and the rows go with
-- their delivery anyway. Retention deletes them in the statement that deletes their delivery
-- (src/ops/retention.ts); delivery ids start with their creation time, so the primary key is also
-- the attempts' order by age.
CREATE TABLE webhook_delivery_attempts (
  delivery_id text COLLATE "C" NOT NULL,
  attempt integer NOT NULL,
  workspace_id text COLLATE "C" NOT NULL,
  endpoint_id text COLLATE "C" NOT NULL,
  started_at timestamptz NOT NULL,
  ok boolean NOT NULL,
  response_status integer,
  response_time_ms integer,
  error text,
  request_headers jsonb,
  response_headers jsonb,
  response_body text,
  PRIMARY KEY (delivery_id, attempt)
);

-- Endpoint statistics (GET /webhooks/endpoints/{id}/stats): one range of this index per request,
-- read without visiting the table (index-only) since it carries what the statistics count.
CREATE INDEX webhook_delivery_attempts_endpoint ON webhook_delivery_attempts (endpoint_id, started_at) INCLUDE (ok, response_time_ms);

-- The delivery list's eventId filter, for the replays of an event's deliveries (and theirs): a
-- replay carries a synthetic event id of its own and points at what it copies by replay_of. The
-- deliveries of the event itself need no index: their ids start with the event's time
-- (src/webhooks/deliveries/store.ts), a short range of the primary key. Only replays are in this one,
-- so the delivery path never writes to it.
CREATE INDEX IF NOT EXISTS webhook_deliveries_replays ON webhook_deliveries (replay_of) WHERE replay_of IS NOT NULL;
