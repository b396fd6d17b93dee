import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { Db } from './db.js';
import { openPglite } from './pglite.js';
import { openPostgres } from './postgres.js';

/** `DATABASE_URL` selects PostgreSQL; otherwise PGlite in `<SVC_DATA_DIR>/pglite`. */
export async function openDatabase(config: Pick<Config, 'databaseUrl' | 'dataDir'>): Promise<Db> {
  if (config.databaseUrl) return openPostgres({ url: config.databaseUrl });
  mkdirSync(config.dataDir, { recursive: true });
  return openPglite(join(config.dataDir, 'pglite'));
}
