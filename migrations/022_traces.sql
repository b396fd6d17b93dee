-- Traces (docs/operations.md, "Traces"): the W3C traceparent of the request whose write made an
-- event, kept so that each delivery attempt's span links to it; null when tracing was off or the
-- write had no request behind it. And the endpoint setting `propagateTrace`: its requests carry a
-- traceparent header of the attempt's span.
ALTER TABLE events ADD COLUMN trace_context text;
ALTER TABLE webhook_endpoints ADD COLUMN propagate_trace boolean NOT NULL DEFAULT false;
