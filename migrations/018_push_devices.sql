-- Web Push (src/notifications/push/): the service's VAPID key pair, the push subscriptions of each
-- user's browsers, and which notifications have had their pushes taken in hand.

-- One row, id 'vapid', made at the first start. The private half is sealed under the master key
-- (svc admin rotate-master-key re-encrypts it); the public half is what browsers subscribe with.
CREATE TABLE push_keys (
  id text COLLATE "C" PRIMARY KEY CHECK (id = 'vapid'),
  public_key text NOT NULL,
  private_key_enc text NOT NULL,
  created_at timestamptz NOT NULL
);

-- A browser's subscription is a capability: its endpoint URL and keys are sealed together under the
-- master key. The endpoint's SHA-256 keeps one row per browser and user; its host is what is shown.
CREATE TABLE push_devices (
  id text COLLATE "C" PRIMARY KEY,
  user_id text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name text NOT NULL,
  endpoint_hash text COLLATE "C" NOT NULL,
  push_service text NOT NULL,
  subscription_enc text NOT NULL,
  created_at timestamptz NOT NULL,
  last_used_at timestamptz,
  UNIQUE (user_id, endpoint_hash)
);

-- NULL: the notification's pushes are still to be sent. Notifications older than this migration
-- count as sent: nobody had a device to send them to.
ALTER TABLE notifications ADD COLUMN push_claimed_at timestamptz;
UPDATE notifications SET push_claimed_at = created_at;
CREATE INDEX notifications_push_pending ON notifications (created_at, id) WHERE push_claimed_at IS NULL;
