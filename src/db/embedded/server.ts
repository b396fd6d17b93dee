import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { blocker, findBinaries, unprivileged, type Binaries, type RunAs } from './binaries.js';
import { alive } from './lock.js';

/** What a data folder holds of the embedded server: its files, its password, its log. */
export const SERVER_FOLDER = 'postgres';
const PASSWORD_FILE = 'postgres.password';
const LOG_FILE = 'postgres.log';
const USER = 'svc';

/**
 * Settings of the embedded server beyond PostgreSQL's defaults: TCP on 127.0.0.1 only (no Unix
 * socket, whose path a deep data folder could make too long).
 */
const SETTINGS = ['listen_addresses=127.0.0.1', 'unix_socket_directories='];

const START_WITHIN_MS = 30_000;
const STOP_WITHIN_MS = 30_000;

/** A running server as its postmaster.pid describes it (PostgreSQL writes `ready` once it accepts connections). */
interface Running {
  pid: number;
  port: number;
  ready: boolean;
}

function running(pgdata: string): Running | null {
  try {
    const lines = readFileSync(join(pgdata, 'postmaster.pid'), 'utf8').split('\n');
    return { pid: Number(lines[0]), port: Number(lines[3]), ready: lines[7]?.trim() === 'ready' };
  } catch {
    return null;
  }
}

/** Whether `pid` is a PostgreSQL server process (where /proc can tell; elsewhere any live process counts). */
function isPostgres(pid: number): boolean {
  if (!alive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres';
  } catch {
    return process.platform !== 'linux';
  }
}

export function urlOf(dataDir: string, port: number): string {
  const password = readFileSync(join(dataDir, PASSWORD_FILE), 'utf8').trim();
  return `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
}

async function answers(url: string): Promise<boolean> {
  const sql = postgres(url, { max: 1, connect_timeout: 2, onnotice: () => {}, fetch_types: false });
  try {
    await sql.unsafe('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await sql.end({ timeout: 0 }).catch(() => {});
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** Runs a binary as `user` (or as this process's user), its output appended to the log; resolves to its exit code. */
function run(binary: string, args: string[], dataDir: string, user: RunAs | null, detached: boolean): { pid: number; exited: Promise<number | null> } {
  const log = openSync(join(dataDir, LOG_FILE), 'a');
  try {
    const child = spawn(binary, args, { detached, stdio: ['ignore', log, log], ...(user ? { uid: user.uid, gid: user.gid } : {}) });
    const exited = new Promise<number | null>((resolve) => {
      child.once('exit', (code) => resolve(code));
      child.once('error', () => resolve(-1));
    });
    if (detached) child.unref();
    return { pid: child.pid ?? 0, exited };
  } finally {
    closeSync(log);
  }
}

function lastLogLine(dataDir: string): string {
  try {
    const lines = readFileSync(join(dataDir, LOG_FILE), 'utf8').trim().split('\n');
    return lines[lines.length - 1] ?? '';
  } catch {
    return '';
  }
}

/**
 * Refuses, before anything is written (ownServer checks first), a folder on the way to the server's files that the user
 * PostgreSQL runs as cannot pass through, naming that folder and the command that opens it.
 */
export function checkReachable(pgdata: string, user: RunAs): void {
  const found = blocker(pgdata, user);
  if (!found) return;
  const mode = found.mode.toString(8).padStart(4, '0');
  throw new Error(
    `PostgreSQL runs as user ${user.name} here (svc runs as root, which PostgreSQL refuses), and ${user.name} cannot pass through ${found.dir} ` +
      `(mode ${mode}, owner uid ${found.owner}) on the way to ${pgdata}: run chmod o+x ${found.dir} (others may then pass through it, not list it), ` +
      `or set SVC_DATA_DIR to a folder ${user.name} can reach, or run svc as another user; nothing was created`,
  );
}

/**
 * Makes the server's files: a new cluster whose one user has a generated password, kept in the data
 * folder (mode 0600). A failure removes what it made, so that the next start begins afresh.
 */
async function initialise(binaries: Binaries, dataDir: string, pgdata: string, user: RunAs | null): Promise<void> {
  const password = randomBytes(24).toString('base64url');
  const passwordFile = join(dataDir, PASSWORD_FILE);
  // An empty folder of the server's may be left by an earlier version's refused start: initdb takes it.
  const made = !existsSync(pgdata);
  writeFileSync(passwordFile, password + '\n', { mode: 0o600 });
  mkdirSync(pgdata, { recursive: true, mode: 0o700 });
  // initdb reads the password from a file, which must be its user's.
  const pwfile = join(tmpdir(), `svc-initdb-${randomBytes(6).toString('hex')}`);
  writeFileSync(pwfile, password + '\n', { mode: 0o600 });
  try {
    if (user) {
      chownSync(pgdata, user.uid, user.gid);
      chownSync(pwfile, user.uid, user.gid);
    }
    // Without data checksums, as initdb made clusters before PostgreSQL 18 (and as most servers
    // run): with them, setting a hint bit on a page after a checkpoint writes the whole page to the
    // WAL, which took a fifth off the embedded server's write and delivery rates (bench/notes.md).
    const args = ['-D', pgdata, '-U', USER, `--pwfile=${pwfile}`, '-A', 'scram-sha-256', '-E', 'UTF8', '--locale=C', '--no-instructions', '--no-data-checksums'];
    const code = await run(binaries.initdb, args, dataDir, user, false).exited;
    if (code !== 0) throw new Error(`PostgreSQL's initdb failed in ${pgdata}: ${lastLogLine(dataDir)} (the whole log: ${join(dataDir, LOG_FILE)})`);
  } catch (error) {
    if (made) rmSync(pgdata, { recursive: true, force: true });
    rmSync(passwordFile, { force: true });
    throw error;
  } finally {
    rmSync(pwfile, { force: true });
  }
}

/** Starts the server detached (a Ctrl-C in the terminal reaches svc, which stops it in turn) and waits until it accepts connections. */
async function start(binaries: Binaries, dataDir: string, pgdata: string, user: RunAs | null): Promise<Running> {
  for (let tries = 1; ; tries++) {
    const port = await freePort();
    const server = run(binaries.postgres, ['-D', pgdata, '-p', String(port), ...SETTINGS.flatMap((s) => ['-c', s])], dataDir, user, true);
    let exited = false;
    void server.exited.then(() => (exited = true));
    const until = Date.now() + START_WITHIN_MS;
    while (!exited && Date.now() < until) {
      const state = running(pgdata);
      if (state?.ready && state.pid === server.pid) return state;
      await sleep(20);
    }
    if (!exited) {
      process.kill(server.pid, 'SIGQUIT');
      throw new Error(`PostgreSQL did not start within ${START_WITHIN_MS / 1000} s in ${pgdata}: ${lastLogLine(dataDir)}`);
    }
    // Another process took the port between our look and the server's bind: try another.
    if (tries >= 3 || !/could not (bind|create listen)/.test(lastLogLine(dataDir))) {
      throw new Error(`PostgreSQL did not start in ${pgdata}: ${lastLogLine(dataDir)} (the whole log: ${join(dataDir, LOG_FILE)})`);
    }
  }
}

/** Fast shutdown (open sessions are ended, a checkpoint written), then an immediate one if that takes too long. */
export async function stopServer(pid: number): Promise<void> {
  for (const [signal, withinMs] of [['SIGINT', STOP_WITHIN_MS], ['SIGQUIT', 5_000]] as const) {
    try {
      process.kill(pid, signal);
    } catch {
      return;
    }
    const until = Date.now() + withinMs;
    while (Date.now() < until) {
      if (!alive(pid)) return;
      await sleep(20);
    }
  }
}

export interface OwnServer {
  url: string;
  stop(): Promise<void>;
}

/** How often the process that runs the server checks that it still runs. */
const WATCH_MS = 500;

/**
 * Ends this process, non-zero and with one line saying why, if the server it runs stops under it
 * (killed, crashed): every request would fail until someone restarted it, while a supervisor
 * (systemd, Kubernetes, npm start's caller) restarts svc at once, whose next start recovers the
 * server from its write-ahead log.
 */
function watchServer(pid: number, dataDir: string, pgdata: string): NodeJS.Timeout {
  const watch = setInterval(() => {
    if (alive(pid)) return;
    clearInterval(watch);
    console.error(
      `svc: The PostgreSQL server (pid ${pid}) of ${pgdata} stopped unexpectedly (its log: ${join(dataDir, 'postgres.log')}); ` +
        'exiting so that svc is started again: the next start recovers every committed change',
    );
    process.exit(1);
  }, WATCH_MS);
  watch.unref();
  return watch;
}

/**
 * The data folder's server, for the process that holds the folder's lock: made on first use,
 * started, or, when a killed svc left it running, reused (or stopped and started again if it does
 * not answer), with one line through `log` saying which. It is stopped by stop(), and when this
 * process exits without calling it.
 */
export async function ownServer(dataDir: string, log: (line: string) => void): Promise<OwnServer> {
  const user = unprivileged();
  const pgdata = join(dataDir, SERVER_FOLDER);
  const fresh = !existsSync(join(pgdata, 'PG_VERSION'));
  if (fresh && user) checkReachable(pgdata, user);
  const binaries = findBinaries(user);
  if (fresh) {
    if (user) log(`The PostgreSQL server in ${pgdata} runs as user ${user.name}: PostgreSQL refuses to run as root, as svc does here`);
    await initialise(binaries, dataDir, pgdata, user);
  }

  let server: Running | null = null;
  const left = running(pgdata);
  if (left && isPostgres(left.pid)) {
    if (left.ready && (await answers(urlOf(dataDir, left.port)))) {
      log(`Reusing the PostgreSQL server (pid ${left.pid}) that an earlier svc left running on ${pgdata}`);
      server = left;
    } else {
      log(`Stopping the PostgreSQL server (pid ${left.pid}) that an earlier svc left on ${pgdata}, which does not answer; starting it again`);
      await stopServer(left.pid);
    }
  } else if (left) {
    // Its process is gone and the pid may be another's now: PostgreSQL would take it for a live server.
    rmSync(join(pgdata, 'postmaster.pid'), { force: true });
  }
  server ??= await start(binaries, dataDir, pgdata, user);

  const { pid } = server;
  const watch = watchServer(pid, dataDir, pgdata);
  const onExit = () => {
    try {
      process.kill(pid, 'SIGINT');
    } catch {
      // Already stopped.
    }
  };
  process.on('exit', onExit);
  return {
    url: urlOf(dataDir, server.port),
    stop: async () => {
      clearInterval(watch);
      process.removeListener('exit', onExit);
      await stopServer(pid);
    },
  };
}

/** The URL of the server that another svc process (`holder`) runs on the folder, once it accepts connections. */
export async function serverOf(dataDir: string, holder: number): Promise<string> {
  const until = Date.now() + START_WITHIN_MS;
  for (;;) {
    const state = running(join(dataDir, SERVER_FOLDER));
    if (state?.ready && alive(state.pid)) return urlOf(dataDir, state.port);
    if (Date.now() > until || !alive(holder)) throw new Error(`svc (pid ${holder}) holds ${dataDir}, but its PostgreSQL server is not running`);
    await sleep(50);
  }
}
