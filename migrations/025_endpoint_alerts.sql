-- no transaction: the deliveries index below is built without holding writes up, so every
-- statement here may run again after a stop halfway.
--
-- Failure alerts (src/webhooks/alerts/, docs/webhooks.md "Failure alerts"): people are told when an
-- endpoint has failed every attempt for a while, when it is one failed delivery from being
-- disabled, and when it delivers again.
--
-- `alerts`: the endpoint's opt-out. The incident columns are written by the periodic check only,
-- never by the delivery path: `failing_since` (the first failed attempt after the last success) is
-- set by the one check that wins the conditional UPDATE and so sends the failing notice; with it,
-- what failed (`failing_status`, `failing_error`) and how many deliveries waited for a retry
-- (`failing_waiting`) at that moment. `disable_warned_at`: when the notice of being one failed
-- delivery from auto-disable was sent, in this incident. All null while the endpoint is not failing.
ALTER TABLE webhook_endpoints
  ADD COLUMN IF NOT EXISTS alerts boolean NOT NULL DEFAULT true,
  ADD COLUMN IF NOT EXISTS failing_since timestamptz,
  ADD COLUMN IF NOT EXISTS failing_status integer,
  ADD COLUMN IF NOT EXISTS failing_error text,
  ADD COLUMN IF NOT EXISTS failing_waiting integer,
  ADD COLUMN IF NOT EXISTS disable_warned_at timestamptz;

-- The endpoints the check looks at besides those with deliveries waiting for a retry: an incident
-- open, or active with failed deliveries in a row (an auto-disabled endpoint keeps its count, and
-- would be read at every look otherwise). A healthy endpoint is in neither index.
CREATE INDEX IF NOT EXISTS webhook_endpoints_troubled ON webhook_endpoints (id) WHERE failing_since IS NOT NULL OR (consecutive_failures > 0 AND active);

-- Deliveries waiting for a retry, by endpoint: which endpoints fail now, and how many deliveries
-- wait. A delivery enters it at its first failed attempt; a delivery that succeeds at its first
-- attempt never does, so the delivery path writes an entry only for failures. Built CONCURRENTLY:
-- on a database of millions of deliveries, writes go on while it is built. One left invalid by a
-- stop halfway is dropped and built again.
DROP INDEX CONCURRENTLY IF EXISTS webhook_deliveries_retrying;
CREATE INDEX CONCURRENTLY webhook_deliveries_retrying ON webhook_deliveries (endpoint_id) WHERE status = 'pending' AND attempt > 0;

-- The notices of a workspace per window of SVC_ALERT_DIGEST_WINDOW: past SVC_ALERT_DIGEST_AFTER in
-- one window, notices are held and counted by kind, and one digest tells of them at its end.
CREATE TABLE IF NOT EXISTS webhook_alert_windows (
  workspace_id text COLLATE "C" NOT NULL,
  starts_at timestamptz NOT NULL,
  notices integer NOT NULL,
  held_failing integer NOT NULL DEFAULT 0,
  held_disabling integer NOT NULL DEFAULT 0,
  held_recovered integer NOT NULL DEFAULT 0,
  digest_at timestamptz,
  PRIMARY KEY (workspace_id, starts_at)
);
