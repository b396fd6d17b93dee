import { Type, type TSchema } from '@sinclair/typebox';
import { EXAMPLE_PAGE_URL } from './examples.js';
import type { FastifyRequest } from 'fastify';
import { validation } from './errors.js';
import type { Cursor, Page } from '../db/keyset.js';
import type { CursorCodec, ListBinding } from './pagination.js';

/** What list answers need of the service: its page tokens and its public address. */
export interface ListContext {
  cursors: CursorCodec;
  config: { publicUrl: string };
}

/** The list envelope (docs/api.md#lists) around an item schema. */
export function ListOf<T extends TSchema>(item: T, description: string) {
  return Type.Object(
    {
      data: Type.Array(item),
      nextPageUrl: Type.Union([Type.String({ format: 'uri', examples: [EXAMPLE_PAGE_URL] }), Type.Null()], { description: 'URL of the next page; null at the end.' }),
      previousPageUrl: Type.Union([Type.String({ format: 'uri', examples: [EXAMPLE_PAGE_URL] }), Type.Null()], {
        description: 'URL of the previous page; null on the first page.',
      }),
    },
    { description },
  );
}

export interface ListEnvelope<T> {
  data: T[];
  nextPageUrl: string | null;
  previousPageUrl: string | null;
}

/**
 * A list page's JSON (ListOf) joined from its items' JSON texts, stored or rendered by the
 * database, without parsing and serialising them again.
 */
export function pageJson(items: string[], urls: { nextPageUrl: string | null; previousPageUrl: string | null }): string {
  return `{"data":[${items.join(',')}],"nextPageUrl":${JSON.stringify(urls.nextPageUrl)},"previousPageUrl":${JSON.stringify(urls.previousPageUrl)}}`;
}

/** Small result sets come whole, with both URLs null (docs/api.md#lists). */
export function wholeList<T>(data: T[]): ListEnvelope<T> {
  return { data, nextPageUrl: null, previousPageUrl: null };
}

/** Small sets never issue cursors, so any `page` given to them is one they did not issue. */
export function refusePage(page: string | undefined): void {
  if (page !== undefined) throw validation('Invalid page token: this list is returned whole and has no pages.', [{ path: 'page', message: 'invalid page token' }]);
}

/** Absolute URLs of the neighbouring pages, carrying every filter, `limit`, `expand` and the cursor. */
export function pageUrls(
  ctx: ListContext,
  request: FastifyRequest,
  binding: ListBinding,
  page: Pick<Page<unknown>, 'next' | 'previous'>,
  expand?: Set<string>,
): { nextPageUrl: string | null; previousPageUrl: string | null } {
  const path = request.url.split('?')[0];
  const build = (cursor: Cursor | null) => {
    if (!cursor) return null;
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(binding.filters)) if (value !== undefined) query.set(key, value);
    query.set('limit', String(binding.limit));
    if (expand?.size) query.set('expand', [...expand].join(','));
    query.set('page', ctx.cursors.encode(cursor, binding));
    return `${ctx.config.publicUrl}${path}?${query}`;
  };
  return { nextPageUrl: build(page.next), previousPageUrl: build(page.previous) };
}

/** Decodes the request's `page` against its binding (400 when it does not fit), or null for page one. */
export function requestCursor(ctx: ListContext, page: string | undefined, binding: ListBinding): Cursor | null {
  return page === undefined ? null : ctx.cursors.decode(page, binding);
}
