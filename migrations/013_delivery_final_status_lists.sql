-- The delivery list filtered by a final failure (status failed or disabled), of an endpoint or of a
-- workspace. Without these, such a page walks the endpoint's or the workspace's deliveries newest
-- first and checks each row's status: cheap while failures are common, but an endpoint that rarely
-- fails is read whole (measured: 135 ms for an endpoint of 10,000 deliveries among 10 million, and
-- it grows with the endpoint). Only rows in a final failure are in them, so the delivery path writes
-- an entry only when a delivery gives up or is disabled, never for a pending or a successful row.
-- The list names the status as a literal (src/webhooks/deliveries/store.ts), so every plan of it,
-- generic ones too, can see that a row it asks for is in these indexes.
CREATE INDEX webhook_deliveries_endpoint_failures ON webhook_deliveries (endpoint_id, status, created_at DESC, id DESC)
  WHERE status IN ('failed', 'disabled');
CREATE INDEX webhook_deliveries_workspace_failures ON webhook_deliveries (workspace_id, status, created_at DESC, id DESC)
  WHERE status IN ('failed', 'disabled');
