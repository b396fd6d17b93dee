import type { Config } from '../lib/config.js';
import type { Db } from './db.js';
import { folderServer } from './embedded/folder.js';
import { openPostgres } from './postgres.js';

/** Connections of a process for its writes and short transactions. */
const API_CONNECTIONS = 10;

export interface OpenOptions {
  /** `svc serve`: the embedded data folder is this process's, and a second one is refused. */
  owner?: boolean;
  /** Connections beyond the API's that delivery workers may keep in open transactions. */
  heldConnections?: number;
  /** Where the embedded server's few lines go (reused, run as another user, ...). */
  log?: (line: string) => void;
}

/**
 * PostgreSQL at `DATABASE_URL`, or else the embedded server of `SVC_DATA_DIR`
 * (embedded/folder.ts), which closing the database stops when this process runs it.
 */
export async function openDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'dbConnectTimeoutMs' | 'dbStatementTimeoutMs' | 'dbQueryTimeoutMs' | 'dbKeepAliveMs' | 'dbReadConnections'>,
  options: OpenOptions = {},
): Promise<Db> {
  const server = config.databaseUrl ? null : await folderServer(config.dataDir, { owner: options.owner === true, log: options.log ?? ((line) => console.error(line)) });
  try {
    const db = await openPostgres({
      url: config.databaseUrl ?? server!.url,
      poolSize: API_CONNECTIONS + (options.heldConnections ?? 0),
      readConnections: config.dbReadConnections,
      timeouts: {
        connectMs: config.dbConnectTimeoutMs,
        statementMs: config.dbStatementTimeoutMs,
        queryMs: config.dbQueryTimeoutMs,
        keepAliveMs: config.dbKeepAliveMs,
      },
    });
    if (!server) return db;
    return {
      ...db,
      close: async () => {
        try {
          await db.close();
        } finally {
          await server.stop();
        }
      },
    };
  } catch (error) {
    await server?.stop();
    throw error;
  }
}
