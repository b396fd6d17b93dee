-- An endpoint slowed down by its answers (429, 502, 503, 504, time-outs): the attempts a worker lets
-- it have in flight now, and since when it is throttled; both null while it is not
-- (src/webhooks/engine/lanes.ts, throttles.ts). Shown as the endpoint's `throttle`.
ALTER TABLE webhook_endpoints ADD COLUMN throttle_share integer, ADD COLUMN throttled_since timestamptz;
