-- The hourly level of the endpoint statistics (src/webhooks/attempts/rollup.ts): one row per endpoint
-- and hour, whatever the endpoint's traffic, so the 24h and 7d windows read at most 24 and 168 rows
-- (migrations/012's 5-minute level keeps one row per distinct rounded time and verdict: up to a few
-- hundred per 5 minutes for a busy endpoint, so a week could be hundreds of thousands of rows).
-- successes and failures are exact; the histogram counts the attempts with a measured time (failures
-- included) by latency class, as two arrays in ascending order of latency_ms, empty classes left out.
-- A class is exact below 32 ms, then 16 classes per power of two (32-33, 34-35, ..., 64-67, ...),
-- kept as its midpoint: within 1/32 (3.2%) of every time it holds. Written by the same job and in the
-- same transaction as the 5-minute level, from the attempts: a row is added to (n = n + excluded.n)
-- each time the job counts a part of its hour. No secrets (nothing to re-encrypt).
CREATE TABLE webhook_endpoint_stats_hourly (
  endpoint_id text COLLATE "C" NOT NULL,
  workspace_id text COLLATE "C" NOT NULL,
  hour_start timestamptz NOT NULL,
  successes integer NOT NULL,
  failures integer NOT NULL,
  latency_ms integer[] NOT NULL,
  latency_n integer[] NOT NULL,
  PRIMARY KEY (endpoint_id, hour_start)
);

-- Retention deletes the oldest hours of every endpoint, in batches: an index on an expression the
-- statistics never name, for the reason given in migrations/012.
CREATE INDEX webhook_endpoint_stats_hourly_age ON webhook_endpoint_stats_hourly (date_bin('1 hour', hour_start, timestamptz 'epoch'));

-- The hourly level holds every attempt started in [hourly_since, rolled_until) and none outside it.
-- Before this migration the job filled the 5-minute level alone: from here on it fills both, so the
-- hourly level starts at the current watermark (NULL before a first run, which sets both), and the
-- statistics read the 5-minute level below hourly_since, until that falls out of the 7-day window.
ALTER TABLE webhook_endpoint_stats_rollup ADD COLUMN hourly_since timestamptz;
UPDATE webhook_endpoint_stats_rollup SET hourly_since = rolled_until;
