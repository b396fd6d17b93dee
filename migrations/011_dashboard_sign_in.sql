-- One-time dashboard sign-in links (src/dashboard/): a link carries a code, of which only the SHA-256
-- is kept. It is valid for 10 minutes and once: redeeming it sets redeemed_at and records the
-- personal access token it was exchanged for, so that signing out can revoke that token (and only
-- a token minted this way). Rows are deleted a day after their code expired, when the token they
-- minted has expired too.
CREATE TABLE dashboard_sign_ins (
  code_hash text COLLATE "C" PRIMARY KEY,
  user_id text COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  redeemed_at timestamptz,
  token_id text COLLATE "C" REFERENCES personal_access_tokens (id) ON DELETE CASCADE
);
CREATE INDEX dashboard_sign_ins_token ON dashboard_sign_ins (token_id) WHERE token_id IS NOT NULL;
CREATE INDEX dashboard_sign_ins_expiry ON dashboard_sign_ins (expires_at);
