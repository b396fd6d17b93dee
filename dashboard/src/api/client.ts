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

/**
 * A client of this origin's API with the session's token (sent in the Authorization header, never
 * in a URL) and, for /v1/<resource> calls, the workspace. `onUnauthenticated` hears of any 401:
 * the session expired or was revoked.
 */
export function apiClient(token: string, workspaceId: string | undefined, onUnauthenticated: () => void): SvcClient {
  return createSvcClient({
    baseUrl: location.origin,
    token,
    workspaceId,
    fetch: async (request) => {
      const response = await fetch(request);
      if (response.status === 401) onUnauthenticated();
      return response;
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
