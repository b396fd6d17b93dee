-- Webhook endpoints. The signing secret must be kept to sign, so it is stored encrypted
-- (AES-256-GCM under the master key), never in clear; after a rotation the previous one signs too
-- until previous_secret_expires_at.
CREATE TABLE webhook_endpoints (
  id text PRIMARY KEY,
  workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  url text NOT NULL,
  description text,
  subscribed_events text[] NOT NULL,
  active boolean NOT NULL,
  disabled_reason text CHECK (disabled_reason IN ('manual', 'auto')),
  secret_enc text NOT NULL,
  previous_secret_enc text,
  previous_secret_expires_at timestamptz,
  consecutive_failures integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz
);
CREATE INDEX webhook_endpoints_page ON webhook_endpoints (workspace_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX webhook_endpoints_fanout ON webhook_endpoints USING gin (subscribed_events) WHERE deleted_at IS NULL;

-- One row per delivery: the row is the job. While pending, next_attempt_at is when a worker may
-- take it; a worker that claims it pushes next_attempt_at forward by the lease, so the row of a
-- crashed worker becomes due again when the lease runs out.
CREATE TABLE webhook_deliveries (
  id text PRIMARY KEY,
  workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  endpoint_id text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  -- The originating event, or a synthetic evt_ id for webhook.ping and replays.
  event_id text NOT NULL,
  event_type text NOT NULL,
  -- The body to send when it is not an event of the log (pings, replays); else events.body.
  payload text,
  replay_of text,
  status text NOT NULL CHECK (status IN ('pending', 'success', 'failed', 'disabled')),
  attempt integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  created_at timestamptz NOT NULL,
  delivered_at timestamptz,
  last_attempt_at timestamptz,
  error text,
  response_status integer,
  response_time_ms integer,
  request_headers jsonb,
  response_body text,
  response_headers jsonb
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_page ON webhook_deliveries (workspace_id, created_at DESC, id DESC);
CREATE INDEX webhook_deliveries_endpoint_page ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);

-- Notifications belong to a user (e.g. an endpoint was auto-disabled in one of their workspaces).
CREATE TABLE notifications (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  type text NOT NULL,
  subject jsonb,
  message text NOT NULL,
  created_at timestamptz NOT NULL,
  read_at timestamptz
);
CREATE INDEX notifications_page ON notifications (user_id, created_at DESC, id DESC);
