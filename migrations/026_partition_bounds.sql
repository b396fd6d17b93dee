-- Time partitions, step 1 of 3 (docs/operations.md, "Partitions"). webhook_deliveries,
-- webhook_delivery_attempts and events become tables partitioned by ranges of their id (ids begin
-- with their creation time, src/lib/ids.ts), and the table as it is becomes their first partition,
-- the history, holding every row written so far. Attaching it may not scan its rows under a lock:
-- a CHECK constraint that bounds its ids, once validated, lets PostgreSQL skip that scan.
--
-- The bound is a day past now, so rows written by processes still running the previous version
-- until step 3 are within it; partitions after it are made by the service (src/db/partitions.ts).
-- Adding the constraint NOT VALID takes a short lock and reads no row.
DO $$
DECLARE
  ms bigint := floor(extract(epoch FROM now() + interval '1 day') * 1000);
  time text := '';
BEGIN
  FOR i IN 1..10 LOOP
    time := substr('0123456789abcdefghjkmnpqrstvwxyz', (ms % 32)::int + 1, 1) || time;
    ms := ms / 32;
  END LOOP;
  EXECUTE format('ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_history_bound CHECK (id < %L) NOT VALID', 'whd_' || time);
  EXECUTE format('ALTER TABLE webhook_delivery_attempts ADD CONSTRAINT webhook_delivery_attempts_history_bound CHECK (delivery_id < %L) NOT VALID', 'whd_' || time);
  EXECUTE format('ALTER TABLE events ADD CONSTRAINT events_history_bound CHECK (id < %L) NOT VALID', 'evt_' || time);
END $$;
