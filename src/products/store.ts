import type { Static } from '@sinclair/typebox';
import type { Queryable } from '../db/db.js';
import { assignments } from '../db/named.js';
import type { Write } from '../engine/outbox/outbox.js';
import { Where } from '../db/where.js';
import { fetchPage, type Cursor, type Page } from '../db/keyset.js';
import { shape, type Row } from '../http/shape.js';
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

export async function findProduct(q: Queryable, workspaceId: string, id: string): Promise<ProductRow | null> {
  const [row] = await q.query<ProductRow>(
    `SELECT ${PRODUCT_COLUMNS} FROM products WHERE id = $1 AND workspace_id = $2 AND deleted_at IS NULL`,
    [id, workspaceId],
  );
  return row ?? null;
}

/** The products of `ids` in the workspace that are not deleted, by id; ids of any other shape find nothing. */
/**
 * A page of products as their JSON texts, rendered by the database from the shape (the metadata map
 * is serialised here, so its keys keep the order JavaScript gives them, integer-like keys first,
 * which jsonb does not). Joining rendered text, as event lists join stored bodies, saves parsing
 * every field of every row, building its view and serialising it again (bench/notes.md).
 * test/product-lists.test.ts holds every item to the single product's answer, byte for byte.
 */
export async function listProductsJson(q: Queryable, workspaceId: string, cursor: Cursor | null, limit: number): Promise<Page<string>> {
  const where = new Where().add('workspace_id = $?', workspaceId).add('deleted_at IS NULL');
  const page = await fetchPage<Row & { id: string; created_at: Date }>(q, { select: `SELECT id, created_at, ${productShape.json.select} FROM products`, where, cursor, limit });
  return { ...page, rows: page.rows.map(productShape.json.text) };
}

/** Applies the given fields only, to a product that is not deleted; with its product.updated event. */
export function updateProduct(workspaceId: string, id: string, input: ProductUpdateInput, now: Date): Write {
  const set = assignments({
    name: input.name,
    description: input.description,
    price_amount: input.price === undefined ? undefined : (input.price?.amount ?? null),
    price_currency: input.price === undefined ? undefined : (input.price?.currency ?? null),
    active: input.active,
    metadata: input.metadata === undefined ? undefined : JSON.stringify(input.metadata),
  });
  return {
    change: {
      sql: `UPDATE products SET updated_at = :now${set.sql ? `, ${set.sql}` : ''}
             WHERE id = :id AND workspace_id = :workspace_id AND deleted_at IS NULL RETURNING ${PRODUCT_COLUMNS}`,
      values: { ...set.values, id, workspace_id: workspaceId, now },
    },
    events: [{ event: { workspaceId, type: 'product.updated', subject: productSubject(id), at: now } }],
  };
}

/** Soft delete (the row stays for the events that name it; reads treat it as gone), with its product.deleted event. */
export function deleteProduct(workspaceId: string, id: string, now: Date): Write {
  return {
    change: {
      sql: 'UPDATE products SET deleted_at = :now WHERE id = :id AND workspace_id = :workspace_id AND deleted_at IS NULL RETURNING id',
      values: { id, workspace_id: workspaceId, now },
    },
    events: [{ event: { workspaceId, type: 'product.deleted', subject: productSubject(id), at: now } }],
  };
}
