-- Endpoint statistics rolled up in the background (src/webhooks/attempts/rollup.ts), so that
-- GET /webhooks/endpoints/{id}/stats reads a few rows per 5 minutes instead of every attempt: the
-- attempts of an endpoint counted by 5-minute bucket (aligned to UTC), verdict and response time.
-- The time is rounded to about two significant digits (exact below 100 ms, to 10 ms below 1 s, to
-- 100 ms below 10 s, to a second above), so a bucket holds at most a couple of hundred rows however
-- many attempts it counts; -1 stands for "no measured time", which keeps it in the primary key.
-- Written only by the rollup job, never on the delivery path; no secrets (nothing to re-encrypt).
CREATE TABLE webhook_endpoint_stats (
  endpoint_id text COLLATE "C" NOT NULL,
  workspace_id text COLLATE "C" NOT NULL,
  bucket_start timestamptz NOT NULL,
  ok boolean NOT NULL,
  latency_ms integer NOT NULL,
  n integer NOT NULL,
  PRIMARY KEY (endpoint_id, bucket_start, ok, latency_ms)
);

-- Retention (src/ops/retention.ts) deletes the oldest buckets of every endpoint, in batches.
CREATE INDEX webhook_endpoint_stats_age ON webhook_endpoint_stats (bucket_start);

-- How far the rollup has gone: every attempt started before rolled_until is counted in
-- webhook_endpoint_stats and none after it. NULL until the first run. One row, always.
CREATE TABLE webhook_endpoint_stats_rollup (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  rolled_until timestamptz
);
INSERT INTO webhook_endpoint_stats_rollup (one, rolled_until) VALUES (true, NULL);
