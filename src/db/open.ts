import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { Db } from './db.js';
import { lockDataDir } from './lock.js';
import { openPglite } from './pglite.js';
import { openPostgres } from './postgres.js';

/** PostgreSQL connections of a process for its queries and short transactions. */
const API_CONNECTIONS = 10;

/**
 * `DATABASE_URL` selects PostgreSQL; otherwise PGlite in `<SVC_DATA_DIR>/pglite`, locked to this
 * process until it closes (a second process gets one line saying so, see lock.ts, rather than a
 * WASM abort). `heldConnections` are PostgreSQL connections beyond the API's that delivery workers
 * may keep in open transactions.
 */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'dbConnectTimeoutMs' | 'dbStatementTimeoutMs' | 'dbQueryTimeoutMs' | 'dbKeepAliveMs' | 'dbReadConnections'>,
  heldConnections = 0,
): Promise<Db> {
  if (config.databaseUrl) {
    return openPostgres({
      url: config.databaseUrl,
      poolSize: API_CONNECTIONS + heldConnections,
      readConnections: config.dbReadConnections,
      timeouts: {
        connectMs: config.dbConnectTimeoutMs,
        statementMs: config.dbStatementTimeoutMs,
        queryMs: config.dbQueryTimeoutMs,
        keepAliveMs: config.dbKeepAliveMs,
      },
    });
  }
  mkdirSync(config.dataDir, { recursive: true });
  const release = lockDataDir(config.dataDir);
  try {
    const db = await openPglite(join(config.dataDir, 'pglite'));
    return {
      ...db,
      close: async () => {
        try {
          await db.close();
        } finally {
          release();
        }
      },
    };
  } catch (error) {
    release();
    throw error;
  }
}
