import createClient, { type Client, type FetchResponse, type HeadersOptions, type MaybeOptionalInit } from 'openapi-fetch';
import { SvcError } from './errors.js';
import type { paths } from './schema.js';
import type { Event, Method, PathsOf, SubjectOf } from './types.js';

export interface SvcClientOptions {
  /** The service's address; default: the SVC_BASE_URL environment variable, else http://127.0.0.1:3000. */
  baseUrl?: string;
  /** An API key (svc_sk_...) or personal access token (svc_pat_...); default: the SVC_API_KEY environment variable. */
  token?: string;
  /** With a personal access token: the workspace that /v1/<resource> calls act in (Service-Workspace-Id). */
  workspaceId?: string;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** A fetch of your own (tests, proxies); default: the global fetch. */
  fetch?: (request: Request) => Promise<Response>;
}

type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];
/** The options argument of a call: optional when nothing in it is required. */
type InitArg<I> = RequiredKeys<I> extends never ? [init?: I] : [init: I];
type Init<P extends keyof paths, M extends Method> = MaybeOptionalInit<paths[P], M>;
/** The body of a call's 2xx answer. */
export type ResponseData<P extends keyof paths, M extends Method> = NonNullable<
  FetchResponse<paths[P][M] & Record<string | number, unknown>, object, 'application/json'>['data']
>;

type Call<M extends Method> = <P extends PathsOf<M>, I extends Init<P, M>>(path: P, ...init: InitArg<I>) => Promise<ResponseData<P, M>>;

/** The GET paths that answer a list envelope, which `paginate` follows. */
export type ListPath = {
  // A path without a JSON answer (the event stream) has `never` as its data, which would match anything.
  [P in PathsOf<'get'>]: [ResponseData<P, 'get'>] extends [never] ? never : ResponseData<P, 'get'> extends { data: unknown[]; nextPageUrl: string | null } ? P : never;
}[PathsOf<'get'>];
/** An item of a list path's pages. */
export type ListItem<P extends ListPath> = ResponseData<P, 'get'> extends { data: (infer T)[] } ? T : never;

export interface SvcClient {
  /** Each returns the 2xx body, typed from the OpenAPI document; any other answer throws SvcError. */
  GET: Call<'get'>;
  POST: Call<'post'>;
  PATCH: Call<'patch'>;
  DELETE: Call<'delete'>;
  /**
   * Every item of a list, page after page: the first page with `init`, then each `nextPageUrl` as
   * the service wrote it, until it is null. Pages are fetched as the loop asks for them.
   */
  paginate<P extends ListPath, I extends Init<P, 'get'>>(path: P, ...init: InitArg<I>): AsyncGenerator<ListItem<P>, void, undefined>;
  /**
   * The current state of what an event is about: a GET of its `subject.url`, or null when the
   * resource is gone (404, as after a `*.deleted` event). Events are notices, not snapshots.
   */
  fetchSubject<E extends Event & { subject: object }>(event: E): Promise<SubjectOf<E> | null>;
  /** The underlying openapi-fetch client: `{data, error, response}` answers, middleware (`raw.use`). */
  raw: Client<paths>;
}

const env = (name: string): string | undefined => (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name];

/** A client of the service with its address and credential set once. */
export function createSvcClient(options: SvcClientOptions = {}): SvcClient {
  const token = options.token ?? env('SVC_API_KEY');
  if (!token) throw new Error('No credential: pass token (an API key or personal access token) or set SVC_API_KEY.');
  const raw = createClient<paths>({
    baseUrl: options.baseUrl ?? env('SVC_BASE_URL') ?? 'http://127.0.0.1:3000',
    headers: {
      ...options.headers,
      authorization: `Bearer ${token}`,
      ...(options.workspaceId ? { 'service-workspace-id': options.workspaceId } : {}),
    },
    // `expand=a,b`: arrays in the query are comma-separated, as the document declares (style form, explode false).
    querySerializer: { array: { style: 'form', explode: false } },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });

  const request = async (method: Method, path: string, init: object | undefined): Promise<any> => {
    const { data, error, response } = await (raw.request as (m: string, p: string, i?: object) => Promise<{ data?: unknown; error?: unknown; response: Response }>)(
      method,
      path,
      init,
    );
    if (!response.ok) throw SvcError.fromResponse(response, error);
    return data;
  };

  async function* paginate(path: string, init?: { headers?: HeadersOptions }): AsyncGenerator<any, void, undefined> {
    let page: { data: unknown[]; nextPageUrl: string | null } = await request('get', path, init);
    for (;;) {
      yield* page.data;
      if (!page.nextPageUrl) return;
      // The next page's URL is opaque and complete: requested as it is, with the same headers.
      const next = new URL(page.nextPageUrl);
      page = await request('get', next.pathname, { baseUrl: next.origin, querySerializer: () => next.search.slice(1), headers: init?.headers });
    }
  }

  const fetchSubject = (event: { subject: { url: string } }) =>
    request('get', event.subject.url, undefined).catch((error) => {
      if (error instanceof SvcError && error.code === 'NOT_FOUND') return null;
      throw error;
    });

  const call = (method: Method) => (path: string, init?: object) => request(method, path, init);
  return { GET: call('get'), POST: call('post'), PATCH: call('patch'), DELETE: call('delete'), paginate, fetchSubject, raw } as SvcClient;
}
