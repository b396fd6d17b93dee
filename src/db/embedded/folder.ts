import { existsSync, mkdirSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { DataDirInUseError, lockDataDir } from './lock.js';
import { ownServer, serverOf } from './server.js';

/** A data folder made by a version of svc that ran PGlite in the process: this one cannot read it. */
export class OlderFolderError extends Error {
  constructor(readonly dataDir: string) {
    super(
      `${dataDir} holds the database of an earlier svc (PGlite, in ${join(dataDir, 'pglite')}), which this version cannot open: ` +
        'move that folder away or set SVC_DATA_DIR to another folder to start afresh; nothing has been changed',
    );
  }
}

export interface FolderServer {
  url: string;
  /** Stops the server if this process runs it; leaves another process's server alone. */
  stop(): Promise<void>;
}

/**
 * The PostgreSQL server of a data folder (SVC_DATA_DIR), for `svc serve` (`owner`) or any other
 * command. The process holding the folder's lock runs the server; `svc serve` takes it, or is
 * refused with one line if another svc holds it. Any other command connects to the server of the
 * svc that holds it, or, when none does, takes the lock and runs the server for its own time.
 */
export async function folderServer(dataDir: string, options: { owner: boolean; log: (line: string) => void }): Promise<FolderServer> {
  if (existsSync(join(dataDir, 'pglite'))) throw new OlderFolderError(dataDir);
  // A refused start leaves no folder it made.
  const made = !existsSync(dataDir);
  mkdirSync(dataDir, { recursive: true });
  let release: () => void;
  try {
    release = lockDataDir(dataDir);
  } catch (error) {
    if (!(error instanceof DataDirInUseError) || options.owner) throw error;
    return { url: await serverOf(dataDir, error.pid), stop: async () => {} };
  }
  try {
    const server = await ownServer(dataDir, options.log);
    return {
      url: server.url,
      stop: async () => {
        try {
          await server.stop();
        } finally {
          release();
        }
      },
    };
  } catch (error) {
    release();
    if (made) removeIfEmpty(dataDir);
    throw error;
  }
}

function removeIfEmpty(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // Not empty (the server's log of a failed initdb, say): kept for the reader.
  }
}
