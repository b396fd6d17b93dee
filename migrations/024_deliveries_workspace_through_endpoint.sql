-- A delivery's workspace is its endpoint's, which the fan-out joins on, and its endpoint's foreign
-- key already removes it with the endpoint (and so with the workspace). The foreign key of its own
-- checked the workspace row once per delivery written, under a share lock every concurrent write
-- of the workspace took on that one row: about a tenth of PostgreSQL's time per event in the ingest
-- benchmark (bench/notes.md).
ALTER TABLE webhook_deliveries DROP CONSTRAINT IF EXISTS webhook_deliveries_workspace_id_fkey;
