import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { folderServer } from '../../src/db/embedded/folder.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

/**
 * Vitest's global setup: the PostgreSQL server of the whole run. TEST_DATABASE_URL when it is set
 * (CI sets the machine's server), otherwise an embedded server of the service's own, started once
 * in a temporary folder and stopped (the folder removed) after the run. Each test file then works
 * in schemas of its own (db.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const given = process.env.TEST_DATABASE_URL;
  if (given) {
    const sql = postgres(given, { max: 1, connect_timeout: 5, onnotice: () => {}, fetch_types: false });
    try {
      await sql.unsafe('SELECT 1');
    } catch (error) {
      throw new Error(`TEST_DATABASE_URL (${new URL(given).host}) does not answer: ${(error as Error).message}`);
    } finally {
      await sql.end({ timeout: 1 });
    }
    project.provide('databaseUrl', given);
    return async () => {};
  }
  const dir = mkdtempSync(join(tmpdir(), 'svc-test-'));
  // Reachable by the user a root process runs PostgreSQL as.
  chmodSync(dir, 0o755);
  const server = await folderServer(dir, { owner: true, log: () => {} });
  project.provide('databaseUrl', server.url);
  return async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
