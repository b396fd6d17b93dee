import { randomBytes } from 'node:crypto';
import { buildApp } from '../app.js';
import { loadConfig } from '../config.js';
import { openPglite } from '../db/pglite.js';
import { createContext } from '../runtime.js';

/**
 * The OpenAPI document exactly as the service serves it, built in this process on an empty
 * in-memory database: no server, no network, no setting from the environment. The SDK's types are
 * generated from it (`npm run sdk:generate`).
 */
export async function buildOpenApiDocument(publicUrl = 'http://127.0.0.1:3000'): Promise<Record<string, unknown>> {
  const db = await openPglite(null);
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
