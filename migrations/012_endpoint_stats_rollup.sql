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
  -- The statistics read one range of this key per request; with n in it too, without the table.
  PRIMARY KEY (endpoint_id, bucket_start, ok, latency_ms) INCLUDE (n)
);

-- Retention (src/ops/retention.ts) deletes the oldest buckets of every endpoint, in batches. The
-- expression equals bucket_start (already on a 5-minute boundary), but only a query that names it
-- can use this index: an index on bucket_start itself would tempt the planner into reading every
-- endpoint's recent buckets for one endpoint's statistics (measured: 1.2 s instead of 0.4 s for a
-- week), since recent rows lie together in the table while one endpoint's rows are spread.
CREATE INDEX webhook_endpoint_stats_age ON webhook_endpoint_stats (date_bin('5 minutes', bucket_start, timestamptz 'epoch'));

-- How far the rollup has gone: every attempt started before rolled_until is counted in
-- webhook_endpoint_stats and none after it. NULL until the first run. One row, always.
CREATE TABLE webhook_endpoint_stats_rollup (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  rolled_until timestamptz
);
INSERT INTO webhook_endpoint_stats_rollup (one, rolled_until) VALUES (true, NULL);
