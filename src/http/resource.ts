import { Kind, Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import type { FastifyContextConfig, FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import type { Cursor, Page } from '../db/keyset.js';
import { isId, type IdPrefix } from '../lib/ids.js';
import { sendCoalesced, type ReadCoalescer } from './coalesce.js';
import { forbidden, notFound, type ErrorCode } from './errors.js';
import { parseExpand } from './expand.js';
import { pageJson, pageUrls, refusePage, requestCursor, wholeList, type ListContext } from './list.js';
import { IdParam, type Mount } from './mount.js';
import { DEFAULT_LIMIT, PageQuery, type ListBinding } from './pagination.js';

/** Who may call a route (the auth hook reads it from the route's config). */
export type Access = NonNullable<FastifyContextConfig['auth']>;

/** The query of a list without filters: `limit` and `page`. */
export const ListQuery = Type.Object(PageQuery, { additionalProperties: false });

/** A resource: a collection path, its item path parameter, its tag and who may read and change it. */
export interface ResourceOptions {
  /** The collection's path below the mount, e.g. `/orders`. */
  path: string;
  tag: string;
  /** A workspace's resource is registered once per mount, which gives its path parameters (mount.ts). */
  mount?: Mount;
  /** Request headers every operation documents (WorkspaceHeader on a workspace's resource). */
  headers?: TObject;
  /** The item's path parameter: `{ name: 'orderId', prefix: 'ord', noun: 'order' }`, 404 `No such order.`; `exists`, for lists below an item (listOf). */
  item?: { name: string; prefix: IdPrefix; noun: string; exists?: (owner: string, id: string) => Promise<unknown> };
  read: Access;
  write: Access;
  /** Page tokens and the public address, for paginated lists. */
  pages?: ListContext;
}

/** What a handler is given: the request, and what the helper has already read and checked. */
export interface Call<B = unknown, Q = unknown> {
  request: FastifyRequest;
  reply: FastifyReply;
  /** The workspace's id on a workspace's resource, the user's on a user's, '' otherwise. */
  owner: string;
  /** The item's id, of the right shape (an item's route); '' on the collection. */
  id: string;
  body: B;
  query: Q;
  /** The names of `expand` given (empty when the route has none). */
  expand: Set<string>;
}

export interface ListCall<Q, W> extends Call<undefined, Q> {
  limit: number;
  cursor: Cursor | null;
  /** What `where` made of the query. */
  where: W;
}

type Responses = TSchema | Record<number, TSchema>;

interface Operation {
  operationId: string;
  summary: string;
  description?: string;
  /** The resource's `read` for reads and `write` for changes, unless given. */
  auth?: Access;
  /** Error codes beyond those every route of its kind gives (server/openapi/conventions.ts). */
  errors?: ErrorCode[];
  /** Below the collection's path, or below the item's (e.g. `/rotate-secret`). */
  path?: string;
  /** The success's schema, sent with `status`; or a schema per status, the handler sending itself. */
  response: Responses;
  status?: number;
}

export interface Handled<B extends TSchema, Q extends TSchema, A = unknown> extends Operation {
  body?: B;
  query?: Q;
  /** The answer, or null for a 404 naming the resource (an item's route). */
  handle: (call: Call<Static<B>, Static<Q>>) => A | Promise<A>;
  /** Turns a non-null answer into what is sent (a row into its view). */
  view?: (answer: NonNullable<A>) => unknown;
}

export interface Listed<Q extends TSchema, R, W> extends Operation {
  query?: Q;
  /** The list's name in its page tokens (`products`): a token of one list is refused by another. */
  list: string;
  /** Query parameters bound into the page token (changing one beside it is a 400), in page URLs' order. */
  filters?: readonly string[];
  expand?: readonly string[];
  /** Reads and checks the filters before the page token is. */
  where?: (query: Static<Q>) => W;
  rows: (call: ListCall<Static<Q>, W>) => Promise<Page<R>>;
  /** The items as answered; each row's `view`, or the rows themselves, when not given. */
  data?: (rows: R[], call: ListCall<Static<Q>, W>) => unknown[] | Promise<unknown[]>;
  view?: (row: R) => unknown;
  /** Rows are JSON texts, and identical requests in flight share one computation (coalesce.ts). */
  coalesce?: ReadCoalescer;
}

export interface Whole<Q extends TSchema> extends Operation {
  query?: Q;
  expand?: readonly string[];
  /** Every item: a small set, returned whole with both page URLs null. */
  items: (call: Call<undefined, Static<Q>>) => unknown[] | Promise<unknown[]>;
}

type Query = { limit?: number; page?: string; expand?: string } & Record<string, unknown>;
type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

const NONE: Set<string> = new Set();

/** The calling token's user (the auth hook already refuses API keys on a user's route; this narrows the type). */
export function userOf(request: FastifyRequest): string {
  const principal = request.principal;
  if (principal?.kind !== 'pat') throw forbidden('This operation needs a personal access token.');
  return principal.userId;
}

function ownerOf(auth: Access): (request: FastifyRequest) => string {
  if (auth.scope === 'workspace') return (request) => request.workspace!.id;
  if (auth.scope === 'user') return userOf;
  return () => '';
}

/**
 * The routes of a resource: list, retrieve, create, update, delete and actions on an item, each
 * declared by its schemas, its access and a store function. The schema, the path parameters, the
 * 404 of an id that cannot exist, pagination and `expand` are the helper's, built once when the
 * route is registered; a handler gets the request's owner, id, body and query already read.
 */
export class Resource {
  private readonly collectionParams: TObject | undefined;
  private readonly itemParams: TObject | undefined;

  constructor(
    private readonly app: FastifyInstance,
    private readonly options: ResourceOptions,
  ) {
    const { mount, item } = options;
    const idParam = item && { [item.name]: IdParam(item.prefix, `${item.noun[0].toUpperCase()}${item.noun.slice(1)} id (${item.prefix}_...).`) };
    this.collectionParams = mount?.params();
    this.itemParams = idParam && (mount ? mount.params(idParam) : Type.Object(idParam));
  }

  /** GET on the collection: a page of it, newest first, with `limit`, `page` and the filters given. */
  list<Q extends TSchema = typeof ListQuery, R = unknown, W = undefined>(spec: Listed<Q, R, W>): void {
    this.route('GET', this.path(spec.path), spec, this.collectionParams, { querystring: spec.query ?? ListQuery }, this.paged(spec, false));
  }

  /** GET below an item (e.g. a delivery's attempts): a page of what belongs to it, 404 when it does not exist. */
  listOf<Q extends TSchema = typeof ListQuery, R = unknown, W = undefined>(spec: Listed<Q, R, W>): void {
    this.route('GET', this.itemPath(spec.path), spec, this.itemParams, { querystring: spec.query ?? ListQuery }, this.paged(spec, true));
  }

  /** GET of a small set, returned whole: a `page` is refused, as it cannot have been issued. */
  all<Q extends TSchema = typeof ListQuery>(spec: Whole<Q>): void {
    const owner = ownerOf(spec.auth ?? this.options.read);
    const expandable = spec.expand;
    this.route('GET', this.path(spec.path), spec, this.collectionParams, { querystring: spec.query ?? ListQuery }, async (request, reply) => {
      const query = request.query as Query;
      const expand = expandable ? parseExpand(query.expand, expandable) : NONE;
      refusePage(query.page);
      const call = { request, reply, owner: owner(request), id: '', body: undefined, query: query as Static<Q>, expand };
      return wholeList(await spec.items(call));
    });
  }

  /** POST on the collection: 201 with what `handle` answers. */
  create<B extends TSchema, A, Q extends TSchema = TSchema>(spec: Handled<B, Q, A>): void {
    const owner = ownerOf(spec.auth ?? this.options.write);
    const status = spec.status ?? 201;
    this.route('POST', this.path(spec.path), { ...spec, status }, this.collectionParams, { body: spec.body }, async (request, reply) => {
      const call = { request, reply, owner: owner(request), id: '', body: request.body as Static<B>, query: request.query as Static<Q>, expand: NONE };
      const created = await spec.handle(call);
      return reply.status(status).send(spec.view ? spec.view(created as NonNullable<A>) : created);
    });
  }

  /** GET of one answer that is not an item (e.g. `/me`), at `path` below the collection's. */
  get<Q extends TSchema = TSchema>(spec: Handled<TSchema, Q>): void {
    const owner = ownerOf(spec.auth ?? this.options.read);
    this.route('GET', this.path(spec.path), spec, this.collectionParams, { querystring: spec.query }, async (request, reply) => {
      return spec.handle({ request, reply, owner: owner(request), id: '', body: undefined, query: request.query as Static<Q>, expand: NONE });
    });
  }

  /** GET of an item (or of something of it, with `path`). */
  retrieve<A, Q extends TSchema = TSchema>(spec: Handled<TSchema, Q, A>): void {
    this.item('GET', spec);
  }

  /** PATCH of an item. */
  update<B extends TSchema, A>(spec: Handled<B, TSchema, A>): void {
    this.item('PATCH', spec);
  }

  /** DELETE of an item: `handle` says whether it was there; `{id, deleted: true}`. */
  remove(spec: Handled<TSchema, TSchema>): void {
    this.item('DELETE', { ...spec, handle: async (call) => ((await spec.handle(call)) ? { id: call.id, deleted: true as const } : null) });
  }

  /** POST of an action on an item, at `path` below it. */
  action<A, B extends TSchema = TSchema>(spec: Handled<B, TSchema, A> & { path: string }): void {
    this.item('POST', spec);
  }

  /** Any method on an item: the id checked for its shape first, null from `handle` a 404. */
  item<B extends TSchema, Q extends TSchema, A>(method: HTTPMethods, spec: Handled<B, Q, A>): void {
    const owner = ownerOf(spec.auth ?? (method === 'GET' ? this.options.read : this.options.write));
    const idOf = this.idOf();
    const status = spec.status ?? 200;
    const view = spec.view;
    const input = { querystring: spec.query, body: spec.body };
    this.route(method, this.itemPath(spec.path), spec, this.itemParams, input, async (request, reply) => {
      const id = idOf(request);
      const call = { request, reply, owner: owner(request), id, body: request.body as Static<B>, query: request.query as Static<Q>, expand: NONE };
      const found = await spec.handle(call);
      if (found === null || found === undefined) throw notFound(this.options.item!.noun);
      const answer = view ? view(found as NonNullable<A>) : found;
      return status === 200 ? answer : reply.status(status).send(answer);
    });
  }

  private path(below = ''): string {
    return `${this.options.path}${below}`;
  }

  private itemPath(below = ''): string {
    return `${this.options.path}/:${this.options.item!.name}${below}`;
  }

  /** The request's item id; an id of the wrong shape can never exist: a 404 like an unknown one, before any query. */
  private idOf(): (request: FastifyRequest) => string {
    const { name, prefix, noun } = this.options.item!;
    return (request) => {
      const id = (request.params as Record<string, string>)[name];
      if (!isId(prefix, id)) throw notFound(noun);
      return id;
    };
  }

  private paged<Q extends TSchema, R, W>(spec: Listed<Q, R, W>, below: boolean): Handler {
    const pages = this.options.pages!;
    const owner = ownerOf(spec.auth ?? this.options.read);
    const idOf = below ? this.idOf() : null;
    const noun = this.options.item?.noun ?? '';
    const exists = this.options.item?.exists;
    if (below && !exists) throw new Error(`${this.options.path}: a list below an item needs the item's exists`);
    const { list, expand: expandable, where, rows, coalesce, view } = spec;
    const data = spec.data ?? (view && ((items: R[]) => items.map(view)));
    const names = spec.filters ?? [];
    const bound =
      names.length === 0
        ? () => ({})
        : (query: Query) => Object.fromEntries(names.map((name) => [name, query[name] === undefined ? undefined : String(query[name])]));
    return async (request, reply) => {
      const query = request.query as Query;
      const limit = query.limit ?? DEFAULT_LIMIT;
      const expand = expandable ? parseExpand(query.expand, expandable) : undefined;
      const ownerId = owner(request);
      const id = idOf ? idOf(request) : '';
      if (idOf && !(await exists!(ownerId, id))) throw notFound(noun);
      const checked = where ? where(query as Static<Q>) : (undefined as W);
      const binding: ListBinding = { list, scope: idOf ? `${ownerId}/${id}` : ownerId, limit, filters: bound(query) };
      const cursor = requestCursor(pages, query.page, binding);
      const call = { request, reply, owner: ownerId, id, body: undefined, query: query as Static<Q>, expand: expand ?? NONE, limit, cursor, where: checked };
      if (coalesce) {
        return sendCoalesced({ reads: coalesce }, request, reply, ownerId, async () => {
          const page = await rows(call);
          return pageJson((data ? await data(page.rows, call) : page.rows) as string[], pageUrls(pages, request, binding, page));
        });
      }
      const page = await rows(call);
      return { data: data ? await data(page.rows, call) : page.rows, ...pageUrls(pages, request, binding, page, expand) };
    };
  }

  private route(method: HTTPMethods, url: string, op: Operation, params: TObject | undefined, input: { querystring?: TSchema; body?: TSchema }, handler: Handler): void {
    const { tag, headers } = this.options;
    const response = Kind in op.response ? { [op.status ?? 200]: op.response } : op.response;
    const schema = {
      tags: [tag],
      ...(headers && { headers }),
      operationId: op.operationId,
      summary: op.summary,
      ...(op.description !== undefined && { description: op.description }),
      ...(params && { params }),
      ...(input.querystring && { querystring: input.querystring }),
      ...(input.body && { body: input.body }),
      response,
    };
    const auth = op.auth ?? (method === 'GET' ? this.options.read : this.options.write);
    this.app.route({ method, url, config: op.errors ? { auth, errors: op.errors } : { auth }, schema, handler });
  }
}

/** The routes of one resource (see Resource). */
export function resource(app: FastifyInstance, options: ResourceOptions): Resource {
  return new Resource(app, options);
}
