import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The data folder is another process's: the svc process that runs its PostgreSQL server (see
 * server.ts). Other commands connect to that server; a second `svc serve` is refused with this.
 */
export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`${dataDir} is in use by svc (pid ${pid}), which runs its database: stop that process first, or set SVC_DATA_DIR to another folder`);
  }
}

export const LOCK_FILE = 'svc.lock';

/** Whether a process with this pid is running (a process of another user counts: EPERM). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function holder(path: string): number | null {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** The pid in the data folder's lock, whether or not that process still runs; null when there is none. */
export function lockHolder(dataDir: string): number | null {
  return holder(join(dataDir, LOCK_FILE));
}

/**
 * Takes `<dataDir>/svc.lock` for this process, or throws DataDirInUseError naming the live process
 * that holds it. The file holds the holder's pid and is created in one step (a hard link of a file
 * already written, which fails if the lock exists), so two processes never both take a free lock.
 * A lock left by a process that is gone (killed, crashed, or this very pid in a new container) is
 * taken over: it is first moved aside under a name of this process, and kept only if what was
 * moved is still the dead process's lock, so two processes taking over one stale lock cannot both
 * win. Returns the release function; the lock is also released when the process exits.
 */
export function lockDataDir(dataDir: string): () => void {
  const path = join(dataDir, LOCK_FILE);
  const mine = join(dataDir, `${LOCK_FILE}.${process.pid}`);
  writeFileSync(mine, `${process.pid}\n`, { mode: 0o600 });
  try {
    for (let tries = 0; ; tries++) {
      try {
        linkSync(mine, path);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || tries >= 5) throw error;
      }
      const pid = holder(path);
      if (pid !== null && pid !== process.pid && alive(pid)) throw new DataDirInUseError(dataDir, pid);
      const aside = `${path}.stale-${process.pid}`;
      try {
        renameSync(path, aside);
      } catch {
        continue; // Someone else moved it first: look again.
      }
      if (holder(aside) !== pid) {
        // What was moved is another live process's fresh lock: put it back and report it.
        try {
          linkSync(aside, path);
        } catch {
          // A third process took the lock meanwhile: it is in use either way.
        }
        unlinkSync(aside);
        throw new DataDirInUseError(dataDir, holder(path) ?? pid ?? 0);
      }
      unlinkSync(aside);
    }
  } finally {
    unlinkSync(mine);
  }

  let held = true;
  const release = () => {
    if (!held) return;
    held = false;
    process.removeListener('exit', release);
    if (holder(path) === process.pid) {
      try {
        unlinkSync(path);
      } catch {
        // Already gone.
      }
    }
  };
  process.on('exit', release);
  return release;
}
