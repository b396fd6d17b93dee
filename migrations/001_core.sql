-- Users, organizations, workspaces, memberships and credentials.
CREATE TABLE users (
  id text PRIMARY KEY,
  email text NOT NULL UNIQUE,
  name text NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE TABLE organizations (
  id text PRIMARY KEY,
  slug text NOT NULL UNIQUE,
  name text NOT NULL,
  logo text,
  created_at timestamptz NOT NULL
);

-- owner and admin are implicit members of every workspace of the organization; member is not.
CREATE TABLE organization_members (
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
  created_at timestamptz NOT NULL,
  PRIMARY KEY (organization_id, user_id)
);
CREATE INDEX organization_members_user ON organization_members (user_id);

CREATE TABLE workspaces (
  id text PRIMARY KEY,
  organization_id text NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  slug text NOT NULL,
  name text NOT NULL,
  image text,
  created_at timestamptz NOT NULL,
  UNIQUE (organization_id, slug)
);

CREATE TABLE workspace_members (
  workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role IN ('owner', 'admin', 'viewer')),
  created_at timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, user_id)
);
CREATE INDEX workspace_members_user ON workspace_members (user_id);

CREATE TABLE api_keys (
  id text PRIMARY KEY,
  workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  name text NOT NULL,
  prefix text NOT NULL,
  token_hash text NOT NULL UNIQUE,
  test boolean NOT NULL,
  rate_limit integer,
  created_at timestamptz NOT NULL,
  last_used_at timestamptz,
  expires_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX api_keys_workspace ON api_keys (workspace_id, created_at DESC, id DESC);

CREATE TABLE personal_access_tokens (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name text NOT NULL,
  prefix text NOT NULL,
  token_hash text NOT NULL UNIQUE,
  test boolean NOT NULL,
  rate_limit integer,
  created_at timestamptz NOT NULL,
  expires_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX personal_access_tokens_user ON personal_access_tokens (user_id);

-- Products: a deleted product keeps its row (deleted_at) so its events' subjects stay meaningful.
CREATE TABLE products (
  id text PRIMARY KEY,
  workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  name text NOT NULL,
  description text,
  price_amount bigint,
  price_currency text,
  active boolean NOT NULL,
  metadata jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  deleted_at timestamptz
);
CREATE INDEX products_page ON products (workspace_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;

-- The event log; body is the exact JSON text served by the API and POSTed to receivers.
CREATE TABLE events (
  id text PRIMARY KEY,
  workspace_id text NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  type text NOT NULL,
  subject_type text,
  subject_id text,
  body text NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX events_page ON events (workspace_id, created_at DESC, id DESC);
CREATE INDEX events_type_page ON events (workspace_id, type, created_at DESC, id DESC);
CREATE INDEX events_subject_page ON events (workspace_id, subject_type, subject_id, created_at DESC, id DESC);
