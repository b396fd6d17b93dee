import { createSvcClient, SvcError, type components, type paths, type SvcClient } from '@svc/sdk';

export { SvcError };
export type { SvcClient };
export type Schemas = components['schemas'];

/** A list page as every list operation answers it. */
export interface Envelope<T> {
  data: T[];
  nextPageUrl: string | null;
  previousPageUrl: string | null;
}

/** What a client tells the signed-in frame: the session ended (any 401), or the service asked it to wait (429). */
export interface ClientEvents {
  unauthenticated(): void;
  /** A GET refused for the rate limit is sent again after this many seconds. */
  rateLimited(seconds: number): void;
}

/** How often a GET refused with 429 is sent again before its page shows the refusal. */
const RATE_LIMIT_RETRIES = 5;

/** Retry-After in whole seconds, at least 1, at most 2 minutes (a longer wait is not worth holding a page for). */
function retryAfterSeconds(response: Response): number {
  const seconds = Number(response.headers.get('retry-after'));
  return Number.isFinite(seconds) && seconds >= 1 ? Math.min(seconds, 120) : 1;
}

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

/**
 * A client of this origin's API with the session's token (sent in the Authorization header, never
 * in a URL) and, for /v1/<resource> calls, the workspace. A GET answered 429 is sent again after
 * Retry-After (a write is not: the person sees the refusal and decides), so a page that was asked
 * for too fast fills in a little later instead of failing.
 */
export function apiClient(token: string, workspaceId: string | undefined, events: ClientEvents): SvcClient {
  return createSvcClient({
    baseUrl: location.origin,
    token,
    workspaceId,
    fetch: async (first) => {
      let request = first;
      for (let attempt = 1; ; attempt++) {
        const again = request.method === 'GET' && attempt <= RATE_LIMIT_RETRIES ? request.clone() : null;
        const response = await fetch(request);
        if (response.status === 401) events.unauthenticated();
        if (response.status !== 429 || !again || request.signal.aborted) return response;
        const seconds = retryAfterSeconds(response);
        events.rateLimited(seconds);
        await pause(seconds * 1000, request.signal);
        request = again;
      }
    },
  });
}

/**
 * A page named by a list's nextPageUrl or previousPageUrl, requested as it is. Only its path and
 * query are used: the service writes its public address into them, and the dashboard talks to the
 * origin it was loaded from.
 */
export async function fetchPage<T>(client: SvcClient, pageUrl: string): Promise<Envelope<T>> {
  const url = new URL(pageUrl);
  const request = client.raw.request as unknown as (method: string, path: string, init: object) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
  const { data, error, response } = await request('get', url.pathname, { querySerializer: () => url.search.slice(1) });
  if (!response.ok) throw SvcError.fromResponse(response, error);
  return data as Envelope<T>;
}

type CreatedSession = paths['/v1/dashboard/sessions']['post']['responses'][201]['content']['application/json'];

/** Exchanges a sign-in link's one-time code for a session token (the one call made without a credential). */
export async function exchangeCode(code: string): Promise<CreatedSession> {
  const response = await fetch('/v1/dashboard/sessions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code }),
    credentials: 'omit',
  });
  const body = await response.json().catch(() => null);
  if (!response.ok) throw SvcError.fromResponse(response, body);
  return body as CreatedSession;
}
