import { createHmac } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { Cursor } from '../db/keyset.js';
import { safeEqual } from '../lib/secretbox.js';
import { EXAMPLE_PAGE } from './examples.js';
import { validation } from './errors.js';

/**
 * The HTTP side of keyset pagination (docs/api.md#lists); the SQL is db/keyset.ts. The
 * `page` token holds a position and a direction, signed together with the list, its workspace,
 * filters and limit, so a tampered, foreign or filter-changed token is refused.
 */
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

export const PageQuery = {
  limit: Type.Optional(
    Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: 'Items per page (default 20, at most 100).', examples: [20] }),
  ),
  page: Type.Optional(
    Type.String({ minLength: 1, maxLength: 512, description: 'Opaque cursor, taken from nextPageUrl or previousPageUrl only.', examples: [EXAMPLE_PAGE] }),
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
