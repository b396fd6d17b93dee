-- Time partitions, step 3 of 3: each table is renamed to <table>_history, a table partitioned by
-- range of its id takes its name, columns, defaults, constraints and indexes, and the history is
-- attached as its first partition, ids from the lowest to the bound of step 1. No row is copied:
-- with the bound validated, ATTACH reads no row, and every index and foreign key of the history is
-- taken as its parent's own partition of it rather than built or checked again. The locks taken
-- here are held for the length of these catalog changes only.
DO $$
DECLARE
  t record;
  c record;
  ix record;
  history text;
  bound text;
BEGIN
  FOR t IN SELECT * FROM (VALUES ('webhook_deliveries', 'id'), ('webhook_delivery_attempts', 'delivery_id'), ('events', 'id')) AS v (name, key) LOOP
    history := t.name || '_history';
    SELECT substring(pg_get_constraintdef(k.oid) FROM '''([^'']+)''') INTO STRICT bound
      FROM pg_constraint k WHERE k.conrelid = t.name::regclass AND k.conname = t.name || '_history_bound';
    EXECUTE format('ALTER TABLE %I RENAME TO %I', t.name, history);
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS) PARTITION BY RANGE (%I)', t.name, history, t.key);
    FOR c IN SELECT k.conname, k.contype, pg_get_constraintdef(k.oid) AS def FROM pg_constraint k
              WHERE k.conrelid = history::regclass AND k.contype IN ('p', 'f', 'c') AND k.conname <> t.name || '_history_bound' LOOP
      IF c.contype IN ('p', 'f') THEN
        EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', history, c.conname, replace(c.conname, t.name, history));
      END IF;
      EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I %s', t.name, c.conname, c.def);
    END LOOP;
    FOR ix IN SELECT r.relname AS name, pg_get_indexdef(i.indexrelid) AS def FROM pg_index i JOIN pg_class r ON r.oid = i.indexrelid
               WHERE i.indrelid = history::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid) LOOP
      EXECUTE format('ALTER INDEX %I RENAME TO %I', ix.name, replace(ix.name, t.name, history));
      EXECUTE format('CREATE INDEX %I ON %I %s', ix.name, t.name, substring(ix.def FROM ' USING .*$'));
    END LOOP;
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', t.name, history, bound);
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', history, t.name || '_history_bound');
  END LOOP;
END $$;
