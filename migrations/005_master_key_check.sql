-- The master key's check value: an HMAC of a fixed text under the key, stored at the first start
-- with it. A process started with another key is refused at once, instead of failing every
-- delivery later with secrets it cannot decrypt. It tells nothing about the key itself.
CREATE TABLE master_key_check (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  check_value text NOT NULL,
  created_at timestamptz NOT NULL,
  rotated_at timestamptz
);
