-- Orders. An order is never deleted; its status moves pending -> paid -> fulfilled, pending ->
-- canceled, paid or fulfilled -> refunded (src/orders/states.ts), each step stamping its *_at.
CREATE TABLE orders (
  id text COLLATE "C" PRIMARY KEY,
  workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  status text NOT NULL CHECK (status IN ('pending', 'paid', 'fulfilled', 'canceled', 'refunded')),
  currency text NOT NULL,
  amount_total bigint NOT NULL CHECK (amount_total >= 0),
  customer_email text,
  metadata jsonb NOT NULL,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  paid_at timestamptz,
  fulfilled_at timestamptz,
  canceled_at timestamptz,
  refunded_at timestamptz
);
-- The list, newest first, and the list filtered by status.
CREATE INDEX orders_page ON orders (workspace_id, created_at DESC, id DESC);
CREATE INDEX orders_status_page ON orders (workspace_id, status, created_at DESC, id DESC);

-- A line item is a snapshot of its product at creation (name, unit price), so product_id has no
-- foreign key: changing or deleting the product later changes no order.
CREATE TABLE order_line_items (
  order_id text COLLATE "C" NOT NULL REFERENCES orders (id) ON DELETE CASCADE,
  position integer NOT NULL,
  workspace_id text COLLATE "C" NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  product_id text COLLATE "C" NOT NULL,
  name text NOT NULL,
  unit_amount bigint NOT NULL CHECK (unit_amount >= 0),
  quantity integer NOT NULL CHECK (quantity BETWEEN 1 AND 10000),
  amount bigint NOT NULL CHECK (amount >= 0),
  PRIMARY KEY (order_id, position)
);
