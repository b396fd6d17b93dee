import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { startTestApp, userOf, type TestApp } from './app.js';
import { expectEnvelope, snapshot, type Envelope } from './security.js';

/** An operation of the OpenAPI document: its method (upper case) and path template. */
export interface Route {
  method: string;
  path: string;
}

export interface HostileApp {
  t: TestApp;
  /** The first demo workspace's API key, its owner's personal access token, and its id. */
  key: string;
  owner: string;
  ws: string;
  /** The port the app listens on, on 127.0.0.1, for raw sockets. */
  port: number;
  /** Every operation of GET /openapi.json. */
  routes: Route[];
}

/** The app the hostile-input suites send their requests to, listening on 127.0.0.1. */
export async function startHostileApp(): Promise<HostileApp> {
  // High limits: this suite is about input, not rate limits.
  const t = await startTestApp({ config: { rateLimitApiKey: 1_000_000, rateLimitPat: 1_000_000, rateLimitUnauthenticated: 1_000_000 } });
  const key = t.demo.workspaces[0].apiKey;
  const owner = userOf(t.demo, 'owner').token;
  const ws = t.demo.workspaces[0].id;
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (t.app.server.address() as { port: number }).port;
  const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> };
  const routes = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => ({ method: method.toUpperCase(), path })));
  return { t, key, owner, ws, port, routes };
}

/** Requests to the app `app` returns (started in a beforeAll, so read at each call). */
export function hostileRequests(app: () => TestApp) {
  /** Sends one request and checks the envelope and an unchanged database; returns the error. */
  async function refused(options: InjectOptions, status?: number, code?: string): Promise<Envelope> {
    const t = app();
    const before = await snapshot(t.ctx);
    const res: LightMyRequestResponse = await t.app.inject(options);
    const label = `${options.method} ${String(options.url).slice(0, 120)}`;
    const error = expectEnvelope(res.statusCode, res.headers, res.body, label);
    if (status !== undefined) expect(res.statusCode, `${label}: ${res.body}`).toBe(status);
    if (code !== undefined) expect(error.code, label).toBe(code);
    expect(await snapshot(t.ctx), label).toEqual(before);
    return error;
  }

  /** A bearer credential: the first demo workspace's API key unless another token is given. */
  const auth = (token = app().demo.workspaces[0].apiKey) => ({ authorization: `Bearer ${token}` });

  return { refused, auth };
}
