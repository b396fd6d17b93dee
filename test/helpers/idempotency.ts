import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { ManualClock, startTestApp, type TestApp } from './app.js';
import { addEndpoint } from './delivery.js';

export const HIGH_LIMITS = { rateLimitApiKey: 1_000_000, rateLimitPat: 1_000_000, rateLimitUnauthenticated: 1_000_000 };
let keys = 0;
/** A key no other test uses. */
export const newKey = (label = 'key') => `${label}-${++keys}-${Math.random().toString(36).slice(2)}`;

/** The app of the idempotency key tests, on a manual clock, and what they call it with. */
export interface KeyedApp {
  t: TestApp;
  clock: ManualClock;
  /** The first demo workspace's API key, and that workspace's id. */
  apiKey: string;
  ws: string;
  endpointId: string;
}

export async function startKeyedApp(): Promise<KeyedApp> {
  const clock = new ManualClock();
  const t = await startTestApp({ clock, config: HIGH_LIMITS });
  // Every product event of the workspace is fanned out to it: deliveries count too.
  const endpointId = (await addEndpoint(t, 'https://example.com/hook')).id;
  return { t, clock, apiKey: t.demo.workspaces[0].apiKey, ws: t.demo.workspaces[0].id, endpointId };
}

/**
 * Requests and counts on the app `app()` (functions, as a beforeAll starts the app): `post` sends
 * `key` as the Idempotency-Key (none when it is null) with `token`, by default `apiKey()`; `count`
 * counts the rows `sql` names after FROM.
 */
export function keyedCalls(app: () => TestApp, apiKey: () => string) {
  const post = (url: string, body: unknown, key: string | null, token = apiKey(), headers: Record<string, string> = {}) =>
    app().call(token, 'POST', url, body, { ...headers, ...(key === null ? {} : { 'idempotency-key': key }) });
  const count = async (sql: string, params: unknown[] = []) => (await app().ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params))[0].n;
  const productsNamed = (name: string) => count('products WHERE name = $1', [name]);
  const storedKeys = () => count('idempotency_keys');
  return { post, count, productsNamed, storedKeys };
}

export function expectReplay(replay: LightMyRequestResponse, first: LightMyRequestResponse): void {
  expect(replay.statusCode).toBe(first.statusCode);
  expect(replay.body).toBe(first.body);
  expect(replay.headers['content-type']).toBe(first.headers['content-type']);
  expect(replay.headers['idempotent-replayed']).toBe('true');
  expect(replay.headers['request-id']).not.toBe(first.headers['request-id']);
}
