-- An endpoint whose receiver answered 410 Gone is disabled at once, with its own reason.
ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_disabled_reason_check;
ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_disabled_reason_check CHECK (disabled_reason IN ('manual', 'auto', 'gone'));
