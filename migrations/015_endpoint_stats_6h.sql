-- The 6-hour level of the endpoint statistics (src/webhooks/attempts/rollup.ts): one row per endpoint
-- and 6-hour block (aligned to UTC: 00:00, 06:00, 12:00, 18:00), whatever the endpoint's traffic, so
-- the 7d window, whose buckets are these blocks, reads about 28 rows instead of migrations/014's 168
-- hours (each with its histogram of up to a few dozen classes to unnest and sum).
-- Same shape as the hourly level: successes and failures are exact; the histogram counts the attempts
-- with a measured time (failures included) by the same latency classes (exact below 32 ms, then 16
-- classes per power of two, kept as the midpoint: within 1/32 of every time it holds), as two arrays
-- in ascending order of latency_ms, empty classes left out. Written by the same job, in the same
-- statement as the 5-minute and hourly levels, from the attempts: a row is added to (n = n + excluded.n)
-- each time the job counts a part of its block. No secrets (nothing to re-encrypt).
CREATE TABLE webhook_endpoint_stats_6h (
  endpoint_id text COLLATE "C" NOT NULL,
  workspace_id text COLLATE "C" NOT NULL,
  block_start timestamptz NOT NULL,
  successes integer NOT NULL,
  failures integer NOT NULL,
  latency_ms integer[] NOT NULL,
  latency_n integer[] NOT NULL,
  PRIMARY KEY (endpoint_id, block_start)
);

-- Retention deletes the oldest blocks of every endpoint, in batches: an index on an expression the
-- statistics never name, for the reason given in migrations/012.
CREATE INDEX webhook_endpoint_stats_6h_age ON webhook_endpoint_stats_6h (date_bin('6 hours', block_start, timestamptz 'epoch'));

-- The 6-hour level holds every attempt started in [six_hour_since, rolled_until) and none outside it.
-- Before this migration the job filled the 5-minute and hourly levels: from here on it fills all three,
-- so the 6-hour level starts at the current watermark (NULL before a first run, which sets all), and
-- the 7d window reads the finer levels below six_hour_since, until that falls out of the window.
ALTER TABLE webhook_endpoint_stats_rollup ADD COLUMN six_hour_since timestamptz;
UPDATE webhook_endpoint_stats_rollup SET six_hour_since = rolled_until;
