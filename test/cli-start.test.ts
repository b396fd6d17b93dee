import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv, cliBuilt, freePort, runCli, startServer, tempDataDir } from './helpers/cli.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether 127.0.0.1:port can be listened on: nothing holds it. */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

async function until(what: string, check: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`${what} after ${ms} ms`);
    await sleep(100);
  }
}

/**
 * `npm start` stopped through npm leaves nothing behind, and the command line's
 * answers to a missing command and to a setting passed as an option.
 */
describe('npm start and the command line', { timeout: 300_000 }, () => {
  let dataDir: string;

  beforeAll(() => {
    if (!cliBuilt()) throw new Error(`${CLI} is missing: build first (npm run build, or npm test)`);
    dataDir = tempDataDir('svc-start-');
  });
  afterAll(() => {
    // What a failed stop left: the folder's PostgreSQL server runs in a session of its own.
    try {
      const left = Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
      if (left > 0 && alive(left)) process.kill(left, 'SIGQUIT');
    } catch {
      // None.
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  // To npm's own process, as a process manager or a script sends it; to the whole process group, as
  // a terminal's Ctrl-C does; and npm killed outright. One folder for all: each start also shows that
  // the one before left it free.
  const stops = [
    ['SIGTERM', 'npm'],
    ['SIGINT', 'npm'],
    ['SIGINT', 'the process group (Ctrl-C)'],
    ['SIGKILL', 'npm'],
  ] as const;
  for (const [signal, target] of stops) {
    it(`stops the server and its PostgreSQL on ${signal} to ${target}, leaving no process, port or lock`, async () => {
      const port = await freePort();
      // A group (and session) of its own, so that what it leaves can be looked for by group.
      const npm = spawn('npm', ['start'], {
        cwd: ROOT,
        env: cleanEnv({ SVC_DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn', SVC_WORKERS: '0' }),
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const group = npm.pid!;
      let postgres = 0;
      let output = '';
      npm.stdout!.on('data', (chunk: Buffer) => (output += chunk));
      npm.stderr!.on('data', (chunk: Buffer) => (output += chunk));
      try {
        // Up to three minutes: start.mjs builds first when a source is newer than the build.
        await until('npm start was not ready', () => /Dashboard sign-in for \S+/.test(output), 180_000);
        expect(output).toContain(`svc is listening on http://127.0.0.1:${port}`);
        const server = Number(readFileSync(join(dataDir, 'svc.lock'), 'utf8'));
        postgres = Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
        expect([alive(server), alive(postgres), await portFree(port)]).toEqual([true, true, false]);

        process.kill(target === 'npm' ? group : -group, signal);
        await until(`processes were left (${output})`, () => !alive(-group) && !alive(server) && !alive(postgres), 60_000);
        expect(await portFree(port)).toBe(true);
        expect(existsSync(join(dataDir, 'svc.lock'))).toBe(false);
        expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
        // A stop, not a crash.
        expect(output).not.toMatch(/did not finish in time|error/i);
      } finally {
        if (alive(-group)) process.kill(-group, 'SIGKILL');
        // Its own session: a failed stop would leave it running.
        if (postgres && alive(postgres)) process.kill(postgres, 'SIGQUIT');
      }
    });
  }

  it('svc serve stops once on a repeated signal, and stops cleanly when signalled while it starts', async () => {
    const env = { SVC_DATA_DIR: dataDir, PORT: String(await freePort()), LOG_LEVEL: 'warn', SVC_WORKERS: '0' };
    const postgresPid = () => {
      try {
        return Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]) || 0;
      } catch {
        return 0;
      }
    };
    // A terminal's Ctrl-C reaches svc and npm start's script, which passes it on: two SIGINTs.
    const server = await startServer([], env);
    const postgres = postgresPid();
    process.kill(server.pid, 'SIGINT');
    process.kill(server.pid, 'SIGINT');
    expect(await server.exited).toBe(0);
    expect(alive(postgres)).toBe(false);

    // SIGTERM once its PostgreSQL server is starting, before it listens: it starts, then stops.
    const child = spawn(process.execPath, [CLI, 'serve'], { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await until('its PostgreSQL server did not start', () => postgresPid() > 0, 60_000);
    const starting = postgresPid();
    child.kill('SIGTERM');
    expect(await exited, output).toBe(0);
    expect(output).not.toContain('svc is listening');
    expect(alive(starting)).toBe(false);
    expect(existsSync(join(dataDir, 'svc.lock'))).toBe(false);
  });

  it('prints its usage and exits 2 without a command, and names PORT for svc serve --port', async () => {
    const bare = await runCli([], {});
    expect([bare.code, bare.stdout]).toEqual([2, '']);
    expect(bare.stderr).toContain('Usage:');
    expect((await runCli(['--help'], {})).code).toBe(0);

    for (const args of [['serve', '--port', '4000'], ['serve', '--demo', '--port=4000']]) {
      const result = await runCli(args, {});
      expect([result.code, result.stdout]).toEqual([2, '']);
      expect(result.stderr.trim()).toBe(
        "svc: --port is not an option of svc serve: the service takes its settings from the environment, so set PORT instead: PORT=4000 svc serve (README.md's configuration table lists them all)",
      );
    }
    // A value that may hold a password is not repeated.
    const url = await runCli(['worker', '--database-url', 'postgres://user:secret@db/svc'], {});
    expect(url.code).toBe(2);
    expect(url.stderr).toContain('set DATABASE_URL instead: DATABASE_URL=VALUE svc worker');
    expect(url.stderr).not.toContain('secret');
    // Other unknown options keep the parser's message; svc listen has no PORT setting to name.
    expect((await runCli(['serve', '--bogus'], {})).stderr.trim()).toBe("svc: Unknown option '--bogus'");
    expect((await runCli(['listen', '--port', '4000'], {})).stderr).not.toContain('PORT');
  });
});
