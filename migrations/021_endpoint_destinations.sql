-- Asymmetric signatures and destinations beyond HTTPS (docs/destinations.md).
--
-- signature_scheme: v1 (HMAC, secret_enc holds a whsec_ secret) or v1a (ed25519, secret_enc and
-- previous_secret_enc hold whsk_ private keys); public_key is the current key's whpk_ public half,
-- null for v1.
-- url_enc: the whole URL, sealed, when it carries credentials (a broker's user and password); url
-- then holds it with the password redacted. exchange, routing_key (amqp://, amqps://) and subject
-- (nats://, tls://): where a broker destination publishes; null for the defaults.
ALTER TABLE webhook_endpoints
  ADD COLUMN signature_scheme text NOT NULL DEFAULT 'v1' CHECK (signature_scheme IN ('v1', 'v1a')),
  ADD COLUMN public_key text,
  ADD COLUMN url_enc text,
  ADD COLUMN exchange text,
  ADD COLUMN routing_key text,
  ADD COLUMN subject text;
