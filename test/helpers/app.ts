import { randomBytes } from 'node:crypto';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { createDemo, type DemoSet } from '../../src/cli/demo.js';
import { buildApp, type App, type AppOptions } from '../../src/server/app.js';
import { loadConfig, type Config } from '../../src/lib/config.js';
import type { AppContext } from '../../src/server/context.js';
import { ManualClock, systemClock, type Clock } from '../../src/lib/clock.js';
import type { PushOptions } from '../../src/notifications/push/queue.js';
import type { RateLimitStore } from '../../src/http/ratelimit/store.js';
import { createContext } from '../../src/server/runtime.js';
import { openTestDb, type TestDb } from './db.js';
import { documentedStatusCheck } from './documented.js';

export const PUBLIC_URL = 'http://api.test';

export interface TestApp {
  app: App;
  ctx: AppContext;
  testDb: TestDb;
  demo: DemoSet;
  clock: Clock;
  /** `app.inject` with a bearer credential; `body` objects are sent as JSON. Fails when the status is not documented. */
  call(token: string | null, method: InjectOptions['method'], url: string, body?: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export function testConfig(overrides: Partial<Config> = {}): Config {
  return { ...loadConfig({ SVC_PUBLIC_URL: PUBLIC_URL, LOG_LEVEL: 'silent' }), ...overrides };
}

/**
 * An app on a fresh database with a demo set seeded; pass a ManualClock to control time, a
 * rate-limit store to share counters between apps (closed with the app), a logger to read the log,
 * a master key when another process (a `svc worker`) must read the same secrets, the push queue's
 * retry delays and time-out.
 */
export async function startTestApp(
  options: { clock?: Clock; config?: Partial<Config>; rateLimits?: RateLimitStore; logger?: AppOptions['logger']; masterKey?: Buffer; push?: PushOptions } = {},
): Promise<TestApp> {
  const testDb = await openTestDb();
  const clock = options.clock ?? systemClock;
  const ctx = createContext(testConfig(options.config), testDb.db, options.masterKey ?? randomBytes(32), clock, { rateLimits: options.rateLimits, push: options.push });
  const app = await buildApp(ctx, { logger: options.logger });
  const demo = await createDemo(testDb.db, PUBLIC_URL, clock.now());
  const checkDocumented = documentedStatusCheck(app);
  return {
    app,
    ctx,
    testDb,
    demo,
    clock,
    call: async (token, method, url, body, headers = {}) => {
      const res = await app.inject({
        method,
        url,
        headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
        ...(body === undefined ? {} : { payload: body as InjectOptions['payload'] }),
      });
      checkDocumented(String(method), url, res.statusCode);
      return res;
    },
    close: async () => {
      await app.close();
      await ctx.rateLimits.close();
      await testDb.close();
    },
  };
}

export { ManualClock };

/** Turns an absolute page URL of the API into the path inject needs. */
export function pathOf(url: string): string {
  const parsed = new URL(url);
  return parsed.pathname + parsed.search;
}

export function userOf(demo: DemoSet, role: DemoSet['users'][number]['role']) {
  return demo.users.find((u) => u.role === role)!;
}
