-- Idempotency keys (DESIGN "Idempotency keys", src/idempotency/): the first successful response
-- of a POST sent with `Idempotency-Key`, written in the same transaction as the change it made, so
-- a retry gets it back instead of changing anything again. `scope` is the workspace the request
-- acted in and the credential's user or key; `request_hash` the SHA-256 of its method, path and
-- body (a retry that differs is refused); `response_enc` its body, sealed under the master key
-- like signing secrets, since a created API key or endpoint answers with a secret. Ids are
-- time-ordered (idk_...): the cleanup deletes rows older than 24 hours as a range of the primary key.
CREATE TABLE idempotency_keys (
  id text COLLATE "C" PRIMARY KEY,
  scope text COLLATE "C" NOT NULL,
  key text COLLATE "C" NOT NULL,
  request_hash text NOT NULL,
  status integer NOT NULL,
  content_type text NOT NULL,
  response_enc text NOT NULL,
  created_at timestamptz NOT NULL,
  UNIQUE (scope, key)
);
