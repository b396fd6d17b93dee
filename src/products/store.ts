import type { Static } from '@sinclair/typebox';
import type { Queryable } from '../db/db.js';
import { SetList } from '../db/set.js';
import { Where } from '../db/where.js';
import { fetchPage, type Cursor, type Page } from '../db/keyset.js';
import { shape, type Row } from '../http/shape.js';
import { isId } from '../lib/ids.js';
import { Product, type ProductUpdateInput } from './schemas.js';

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

/**
 * The Product schema read from its row: every field by the shape's rule except the price, which is
 * two columns (http/shape.ts).
 */
export const productShape = shape(Product, {
  price: {
    columns: ['price_amount', 'price_currency'],
    read: (row) => (row.price_amount === null ? null : { amount: Number(row.price_amount), currency: row.price_currency as string }),
    json: [
      {
        sql: `CASE WHEN price_amount IS NULL THEN 'null'
                   ELSE '{"amount":' || price_amount || ',"currency":' || to_json(price_currency)::text || '}' END`,
      },
    ],
  },
});

export type ProductView = Static<typeof Product>;

export const PRODUCT_COLUMNS = productShape.columns;

export const toView = (row: ProductRow): ProductView => productShape.view(row);

/** The subject of a product's events. */
export function productSubject(id: string) {
  return { type: 'product', id, url: `/v1/products/${id}` };
}

/** A change to products as one statement with RETURNING, for the outbox to pair with its event. */
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

/** The products of `ids` in the workspace that are not deleted, by id; ids of any other shape find nothing. */
export async function findProductsByIds(q: Queryable, workspaceId: string, ids: string[]): Promise<Map<string, ProductRow>> {
  const wanted = [...new Set(ids.filter((id) => isId('prd', id)))];
  if (wanted.length === 0) return new Map();
  const rows = await q.query<ProductRow>(
    `SELECT ${PRODUCT_COLUMNS} FROM products WHERE id = ANY($1::text[]) AND workspace_id = $2 AND deleted_at IS NULL`,
    [wanted, workspaceId],
  );
  return new Map(rows.map((row) => [row.id, row]));
}

/**
 * A page of products as their JSON texts, rendered by the database from the shape (the metadata map
 * is serialised here, so its keys keep the order JavaScript gives them, integer-like keys first,
 * which jsonb does not). Joining rendered text, as event lists join stored bodies,
 * replaces parsing every field of every row, building its view and serialising it again: that was
 * about 40% of the instructions of a list request (1.14 M against 0.67 M each, one query per
 * request). test/product-lists.test.ts holds every item to the single product's answer, byte for byte.
 */
export async function listProductsJson(q: Queryable, workspaceId: string, cursor: Cursor | null, limit: number): Promise<Page<string>> {
  const where = new Where().add('workspace_id = $?', workspaceId).add('deleted_at IS NULL');
  const page = await fetchPage<Row & { id: string; created_at: Date }>(q, { select: `SELECT id, created_at, ${productShape.json.select} FROM products`, where, cursor, limit });
  return { ...page, rows: page.rows.map(productShape.json.text) };
}

/** Applies the given fields only, to a product that is not deleted. */
export function updateProduct(workspaceId: string, id: string, input: ProductUpdateInput, now: Date): ProductStatement {
  const set = new SetList([id, workspaceId, now], 'updated_at = $3')
    .field('name', input.name)
    .field('description', input.description);
  if (input.price !== undefined) set.field('price_amount', input.price?.amount ?? null).field('price_currency', input.price?.currency ?? null);
  set.field('active', input.active).field('metadata', input.metadata === undefined ? undefined : JSON.stringify(input.metadata));
  return {
    sql: `UPDATE products SET ${set.sql}
           WHERE id = $1 AND workspace_id = $2 AND deleted_at IS NULL RETURNING ${PRODUCT_COLUMNS}`,
    params: set.params,
  };
}

/** Soft delete: the row stays for the events that name it; reads treat it as gone. */
export function deleteProduct(workspaceId: string, id: string, now: Date): ProductStatement {
  return {
    sql: 'UPDATE products SET deleted_at = $3 WHERE id = $1 AND workspace_id = $2 AND deleted_at IS NULL RETURNING id',
    params: [id, workspaceId, now],
  };
}
