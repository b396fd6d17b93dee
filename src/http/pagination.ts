import { createHmac } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { Queryable } from '../db/db.js';
import { Where } from '../db/where.js';
import { safeEqual } from '../lib/secretbox.js';
import { validation } from './errors.js';

/**
 * Keyset pagination (spec 4.6, DESIGN "Pagination"): newest first on (created_at, id). The `page`
 * token holds a position and a direction, signed together with the list, its workspace, filters and
 * limit, so a tampered, foreign or filter-changed token is refused.
 */
export interface Position {
  createdAt: Date;
  id: string;
}

export interface Cursor {
  direction: 'next' | 'prev';
  at: Position;
  /** Include the row at `at` itself: used when the page that issued the cursor was empty. */
  inclusive: boolean;
}

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

export const PageQuery = {
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: 'Items per page (default 20, at most 100).' }),
  ),
  page: Type.Optional(
    Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor, taken from nextPageUrl or previousPageUrl only.' }),
  ),
};

export interface ListBinding {
  /** The list's name, e.g. `products`; a token of one list is refused by another. */
  list: string;
  scope: string;
  limit: number;
  filters: Record<string, string | undefined>;
}

const INVALID_PAGE =
  'Invalid page token: it is malformed, was issued for another list, or the filters or limit changed. Follow nextPageUrl or previousPageUrl unchanged.';

export class CursorCodec {
  constructor(private readonly key: Buffer) {}

  /**
   * JSON, not joined text: filter values are free text, so `subjectType=product&type=x` written into one
   * value must not spell the same binding as two filters.
   */
  private bindingText(binding: ListBinding): string {
    const filters = Object.keys(binding.filters)
      .sort()
      .filter((k) => binding.filters[k] !== undefined)
      .map((k) => [k, binding.filters[k]]);
    return JSON.stringify([binding.list, binding.scope, binding.limit, filters]);
  }

  private sign(payload: string, binding: ListBinding): string {
    return createHmac('sha256', this.key).update(`${this.bindingText(binding)}|${payload}`).digest('base64url').slice(0, 22);
  }

  encode(cursor: Cursor, binding: ListBinding): string {
    const payload = Buffer.from(
      JSON.stringify([cursor.direction === 'next' ? 'n' : 'p', cursor.at.createdAt.getTime(), cursor.at.id, cursor.inclusive ? 1 : 0]),
    ).toString('base64url');
    return `${payload}.${this.sign(payload, binding)}`;
  }

  decode(token: string, binding: ListBinding): Cursor {
    const [payload, signature, extra] = token.split('.');
    if (!payload || !signature || extra !== undefined || !safeEqual(signature, this.sign(payload, binding))) {
      throw validation(INVALID_PAGE, [{ path: 'page', message: 'invalid page token' }]);
    }
    const [d, ms, id, inclusive] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as [string, number, string, number];
    return { direction: d === 'n' ? 'next' : 'prev', at: { createdAt: new Date(ms), id }, inclusive: inclusive === 1 };
  }
}

export interface Page<Row> {
  rows: Row[];
  next: Cursor | null;
  previous: Cursor | null;
}

export interface PageQuerySpec {
  /** `SELECT ... FROM ...` without WHERE or ORDER BY. */
  select: string;
  where: Where;
  /** Qualified column names of the keyset, when the select joins tables. */
  createdColumn?: string;
  idColumn?: string;
  cursor: Cursor | null;
  limit: number;
}

/** Runs one keyset page: fetches limit + 1 rows to know whether another page follows. */
export async function fetchPage<Row extends { created_at: Date; id: string }>(q: Queryable, spec: PageQuerySpec): Promise<Page<Row>> {
  const created = spec.createdColumn ?? 'created_at';
  const id = spec.idColumn ?? 'id';
  const { cursor, limit, where } = spec;
  const backward = cursor?.direction === 'prev';
  if (cursor) {
    const op = backward ? (cursor.inclusive ? '>=' : '>') : cursor.inclusive ? '<=' : '<';
    where.add(`(${created}, ${id}) ${op} ($?, $?)`, cursor.at.createdAt, cursor.at.id);
  }
  const order = backward ? 'ASC' : 'DESC';
  const sql = `${spec.select} ${where.sql} ORDER BY ${created} ${order}, ${id} ${order} LIMIT ${where.param(limit + 1)}`;
  const fetched = await q.query<Row>(sql, where.params);
  const more = fetched.length > limit;
  const rows = fetched.slice(0, limit);
  if (backward) rows.reverse();

  const position = (row: Row): Position => ({ createdAt: row.created_at, id: row.id });
  const first = rows[0];
  const last = rows[rows.length - 1];
  if (!cursor) {
    return { rows, previous: null, next: more ? { direction: 'next', at: position(last), inclusive: false } : null };
  }
  if (backward) {
    return {
      rows,
      previous: more ? { direction: 'prev', at: position(first), inclusive: false } : null,
      next: last ? { direction: 'next', at: position(last), inclusive: false } : { direction: 'next', at: cursor.at, inclusive: !cursor.inclusive },
    };
  }
  return {
    rows,
    next: more ? { direction: 'next', at: position(last), inclusive: false } : null,
    previous: first ? { direction: 'prev', at: position(first), inclusive: false } : { direction: 'prev', at: cursor.at, inclusive: !cursor.inclusive },
  };
}
