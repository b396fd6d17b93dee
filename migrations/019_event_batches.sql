-- The event log in commit order, for the live stream (docs/events-stream.md). Each write puts its
-- events of one workspace in a batch (src/outbox/); once the write has committed, the sequencer
-- (src/events/sequencer.ts) gives the batch the next position, in the order batches become visible.
-- A reader follows a workspace's batches by position, so it sends each event once, after every
-- event that committed before it, however long its write took.
CREATE TABLE event_batches (
  id text COLLATE "C" PRIMARY KEY,
  workspace_id text COLLATE "C" NOT NULL,
  event_ids text[] NOT NULL,
  position bigint
);
CREATE UNIQUE INDEX event_batches_position ON event_batches (workspace_id, position) WHERE position IS NOT NULL;
CREATE INDEX event_batches_unpositioned ON event_batches (id) WHERE position IS NULL;
-- The last position given: its one row is what serialises the sequencers of every process.
CREATE TABLE event_positions (last bigint NOT NULL);
ALTER TABLE events ADD COLUMN batch_id text COLLATE "C";
-- Events written before this version: a batch each, in the order of their time.
INSERT INTO event_batches (id, workspace_id, event_ids, position)
  SELECT 'evb_' || substr(id, 5), workspace_id, ARRAY[id], row_number() OVER (ORDER BY created_at, id) FROM events;
INSERT INTO event_positions (last) SELECT count(*) FROM events;
UPDATE events SET batch_id = 'evb_' || substr(id, 5);
