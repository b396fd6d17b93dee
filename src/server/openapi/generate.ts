import { randomBytes } from 'node:crypto';
import { buildApp } from '../app.js';
import { loadConfig } from '../../lib/config.js';
import { openPostgres } from '../../db/postgres.js';
import { createContext } from '../runtime.js';

/**
 * The OpenAPI document exactly as the service serves it, built in this process without a database
 * (its connections point at a port nobody listens on: building the document asks nothing of it) and
 * without a setting from the environment. The SDK's types are generated from it (`npm run sdk:generate`).
 */
export async function buildOpenApiDocument(publicUrl = 'http://127.0.0.1:3000'): Promise<Record<string, unknown>> {
  const db = await openPostgres({ url: 'postgres://127.0.0.1:1/none', timeouts: { connectMs: 1_000 } });
  try {
    const ctx = createContext(loadConfig({ SVC_PUBLIC_URL: publicUrl, LOG_LEVEL: 'silent' }), db, randomBytes(32));
    const app = await buildApp(ctx);
    try {
      await app.ready();
      return structuredClone(app.swagger()) as Record<string, unknown>;
    } finally {
      await app.close();
      await ctx.rateLimits.close();
    }
  } finally {
    await db.close();
  }
}
