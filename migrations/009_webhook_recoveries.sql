-- Bulk recoveries of an endpoint's deliveries (POST /webhooks/endpoints/{endpointId}/recover,
-- src/webhooks/recoveries/). The row is the job: a runner walks the deliveries of the window in
-- (created_at, id) order, one short transaction per batch, which creates that batch's replays and
-- moves the cursor past them. A process stopped mid-run leaves the row 'running' with its cursor;
-- any runner takes it up again once its lease has run out, and goes on from the cursor.
CREATE TABLE webhook_recoveries (
  id text COLLATE "C" PRIMARY KEY,
  workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  endpoint_id text COLLATE "C" NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  window_since timestamptz NOT NULL,
  window_until timestamptz NOT NULL,
  statuses text[] NOT NULL,
  status text NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
  -- Deliveries to replay when the recovery was made; replayed and skipped grow batch by batch.
  count integer NOT NULL,
  replayed integer NOT NULL DEFAULT 0,
  skipped integer NOT NULL DEFAULT 0,
  error text,
  cursor_created_at timestamptz,
  cursor_id text COLLATE "C",
  lease_owner text,
  lease_until timestamptz,
  created_at timestamptz NOT NULL,
  completed_at timestamptz
);
-- An endpoint's recoveries, newest first (GET /webhooks/endpoints/{endpointId}/recoveries).
CREATE INDEX webhook_recoveries_endpoint ON webhook_recoveries (endpoint_id, created_at DESC, id DESC);
-- What runners look for: recoveries still running, whose lease has run out.
CREATE INDEX webhook_recoveries_running ON webhook_recoveries (lease_until) WHERE status = 'running';
