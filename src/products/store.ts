import type { Queryable } from '../db/db.js';
import { Where } from '../db/where.js';
import { fetchPage, type Cursor, type Page } from '../http/pagination.js';
import { toIso } from '../lib/iso.js';
import type { ProductUpdateInput } from './schemas.js';

export interface ProductRow {
  id: string;
  name: string;
  description: string | null;
  price_amount: number | null;
  price_currency: string | null;
  active: boolean;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
}

export interface ProductView {
  id: string;
  name: string;
  description: string | null;
  price: { amount: number; currency: string } | null;
  active: boolean;
  metadata: Record<string, string>;
  createdAt: string;
  updatedAt: string;
}

export const PRODUCT_COLUMNS = 'id, name, description, price_amount, price_currency, active, metadata, created_at, updated_at';

export function toView(row: ProductRow): ProductView {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    price: row.price_amount === null ? null : { amount: Number(row.price_amount), currency: row.price_currency! },
    active: row.active,
    metadata: row.metadata,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

/** The subject of a product's events. */
export function productSubject(id: string) {
  return { type: 'product', id, url: `/v1/products/${id}` };
}

/** A change to products as one statement with RETURNING, for mutateAndEmit to pair with its event. */
export interface ProductStatement {
  sql: string;
  params: unknown[];
}

export async function findProduct(q: Queryable, workspaceId: string, id: string): Promise<ProductRow | null> {
  const [row] = await q.query<ProductRow>(
    `SELECT ${PRODUCT_COLUMNS} FROM products WHERE id = $1 AND workspace_id = $2 AND deleted_at IS NULL`,
    [id, workspaceId],
  );
  return row ?? null;
}

export async function listProducts(q: Queryable, workspaceId: string, cursor: Cursor | null, limit: number): Promise<Page<ProductRow>> {
  const where = new Where().add('workspace_id = $?', workspaceId).add('deleted_at IS NULL');
  return fetchPage(q, { select: `SELECT ${PRODUCT_COLUMNS} FROM products`, where, cursor, limit });
}

/** Applies the given fields only, to a product that is not deleted. */
export function updateProduct(workspaceId: string, id: string, input: ProductUpdateInput, now: Date): ProductStatement {
  const sets: string[] = [];
  const params: unknown[] = [id, workspaceId, now];
  const set = (column: string, value: unknown) => {
    params.push(value);
    sets.push(`${column} = $${params.length}`);
  };
  if (input.name !== undefined) set('name', input.name);
  if (input.description !== undefined) set('description', input.description);
  if (input.price !== undefined) {
    set('price_amount', input.price?.amount ?? null);
    set('price_currency', input.price?.currency ?? null);
  }
  if (input.active !== undefined) set('active', input.active);
  if (input.metadata !== undefined) set('metadata', JSON.stringify(input.metadata));
  return {
    sql: `UPDATE products SET updated_at = $3, ${sets.join(', ')}
           WHERE id = $1 AND workspace_id = $2 AND deleted_at IS NULL RETURNING ${PRODUCT_COLUMNS}`,
    params,
  };
}

/** Soft delete: the row stays for the events that name it; reads treat it as gone. */
export function deleteProduct(workspaceId: string, id: string, now: Date): ProductStatement {
  return {
    sql: 'UPDATE products SET deleted_at = $3 WHERE id = $1 AND workspace_id = $2 AND deleted_at IS NULL RETURNING id',
    params: [id, workspaceId, now],
  };
}
