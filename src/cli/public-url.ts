import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../lib/config.js';
import { alive, lockHolder } from '../db/embedded/lock.js';

/** The file in which a running `svc serve` tells the other commands of its data folder where it serves. */
export const SERVE_FILE = 'serve.json';

interface Recorded {
  pid: number;
  publicUrl: string;
}

function read(file: string): Recorded | null {
  try {
    const recorded = JSON.parse(readFileSync(file, 'utf8')) as Partial<Recorded>;
    const usable = Number.isInteger(recorded.pid) && typeof recorded.publicUrl === 'string' && /^https?:\/\//.test(recorded.publicUrl);
    return usable ? (recorded as Recorded) : null;
  } catch {
    return null;
  }
}

/**
 * Records the public URL of this `svc serve` (SVC_PUBLIC_URL, or the port it listens on) in its data
 * folder, so that a link another command makes (svc admin dashboard-link) points at this server,
 * whatever PORT that command's own environment has. Only for the embedded default: with
 * DATABASE_URL no folder is the service's. Returns the function that removes the record, which
 * also runs when the process exits.
 */
export function recordPublicUrl(config: Pick<Config, 'databaseUrl' | 'dataDir' | 'publicUrl'>): () => void {
  if (config.databaseUrl) return () => {};
  const file = join(config.dataDir, SERVE_FILE);
  // Written aside and renamed, so that a reader never sees half of it.
  writeFileSync(`${file}.${process.pid}`, JSON.stringify({ pid: process.pid, publicUrl: config.publicUrl }) + '\n');
  renameSync(`${file}.${process.pid}`, file);
  const remove = () => {
    process.removeListener('exit', remove);
    if (read(file)?.pid === process.pid) rmSync(file, { force: true });
  };
  process.on('exit', remove);
  return remove;
}

/**
 * The public URL of the `svc serve` running on the data folder: the one recorded by the process
 * that holds the folder's lock, while it runs. Null with DATABASE_URL, when no svc serve runs, and
 * for a record left by one that was killed.
 */
export function runningPublicUrl(config: Pick<Config, 'databaseUrl' | 'dataDir'>): string | null {
  if (config.databaseUrl) return null;
  const recorded = read(join(config.dataDir, SERVE_FILE));
  // This very pid is not the server (a pid used again, as in a new container): the record is stale.
  if (!recorded || recorded.pid === process.pid || recorded.pid !== lockHolder(config.dataDir) || !alive(recorded.pid)) return null;
  return recorded.publicUrl;
}
