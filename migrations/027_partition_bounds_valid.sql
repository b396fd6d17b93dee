-- Time partitions, step 2 of 3: the bounds of step 1 checked against every row. VALIDATE reads the
-- tables under a SHARE UPDATE EXCLUSIVE lock, which lets reads and writes go on; this step is the
-- one whose time grows with the tables, and it is committed before step 3 takes its locks.
ALTER TABLE webhook_deliveries VALIDATE CONSTRAINT webhook_deliveries_history_bound;
ALTER TABLE webhook_delivery_attempts VALIDATE CONSTRAINT webhook_delivery_attempts_history_bound;
ALTER TABLE events VALIDATE CONSTRAINT events_history_bound;
