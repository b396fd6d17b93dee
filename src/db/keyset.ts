import type { Queryable } from './db.js';
import type { Where } from './where.js';

/**
 * Keyset pagination in SQL (docs/api.md#lists): newest first on (created_at, id), a page
 * continuing from a position in either direction. The `page` token that carries a Cursor between
 * requests, and the URLs around it, are the HTTP side's (http/pagination.ts, http/list.ts).
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
