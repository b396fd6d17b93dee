-- An endpoint's rateLimit: deliveries per second it accepts, across every worker (null: no limit).
ALTER TABLE webhook_endpoints ADD COLUMN rate_limit integer CHECK (rate_limit > 0);

-- Send times of rate-limited endpoints, shared by every worker process (src/webhooks/engine/rate.ts):
-- next_send_at is the earliest time the endpoint's next delivery may go; granted is how many sends
-- the last update gave out, ending at next_send_at. Kept apart from webhook_endpoints so that these
-- frequent updates neither lock nor rewrite the endpoint rows the API and the fan-out read.
CREATE TABLE webhook_endpoint_rates (
  endpoint_id text COLLATE "C" PRIMARY KEY REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  next_send_at timestamptz NOT NULL,
  granted integer NOT NULL
);
