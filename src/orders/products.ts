import type { Queryable } from '../db/db.js';
import { isId } from '../lib/ids.js';

/** What pricing an order needs of a product its line items name. */
export interface OrderedProduct {
  id: string;
  name: string;
  price_amount: number | null;
  price_currency: string | null;
  active: boolean;
}

/** The workspace's products among `ids` (deleted ones left out), by id; ids of another kind are not looked up. */
export async function findOrderedProducts(q: Queryable, workspaceId: string, ids: string[]): Promise<Map<string, OrderedProduct>> {
  const wanted = [...new Set(ids.filter((id) => isId('prd', id)))];
  if (wanted.length === 0) return new Map();
  const rows = await q.query<OrderedProduct>(
    `SELECT id, name, price_amount, price_currency, active FROM products
      WHERE id = ANY($1::text[]) AND workspace_id = $2 AND deleted_at IS NULL`,
    [wanted, workspaceId],
  );
  return new Map(rows.map((row) => [row.id, row]));
}
