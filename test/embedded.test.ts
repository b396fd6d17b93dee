import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cliBuilt, freePort, request, runCli, startServer, tempDataDir, type Server } from './helpers/cli.js';

/** The pid of the data folder's PostgreSQL server, from its postmaster.pid; null when none runs. */
function serverPid(dataDir: string): number | null {
  try {
    return Number(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Processes whose command line names `dataDir`: what a svc on it started and left. */
function processesOn(dataDir: string): string[] {
  return execFileSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.includes(dataDir) && !line.includes('ps -eo'));
}

/**
 * The embedded default: `svc serve` without DATABASE_URL runs a PostgreSQL server of its own in
 * the data folder, stops it on SIGTERM, and finds it again after being killed.
 */
describe('the embedded PostgreSQL server', { timeout: 240_000 }, () => {
  let dataDir: string;
  let env: Record<string, string>;
  let apiKey: string;
  const running: Server[] = [];
  const serve = async () => {
    const server = await startServer(['--demo'], env);
    running.push(server);
    return server;
  };

  beforeAll(() => {
    if (!cliBuilt()) throw new Error(`${CLI} is missing: build first (npx tsc -p . or npm test)`);
    dataDir = tempDataDir('svc-embedded-');
  });
  afterAll(async () => {
    for (const server of running) await server.stop();
    const pid = serverPid(dataDir);
    if (pid && alive(pid)) process.kill(pid, 'SIGQUIT');
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Creates products, `parallel` at a time, until `stop()`; resolves to the ids whose 201 arrived. */
  function writeUntilStopped(base: string, parallel: number) {
    let stopped = false;
    const acknowledged: string[] = [];
    const done = Promise.all(
      Array.from({ length: parallel }, async (_, lane) => {
        for (let i = 0; !stopped; i++) {
          try {
            const res = await request(`${base}/v1/products`, apiKey, { method: 'POST', body: { name: `Written ${lane}-${i}` } });
            if (res.status === 201) acknowledged.push(res.body.id);
          } catch {
            // The service was killed under this request: its outcome is unknown, so it is not counted.
          }
        }
      }),
    );
    /** Resolves once `count` writes are acknowledged (a busy machine writes slowly), within 60 s. */
    const acknowledging = async (count: number) => {
      for (const deadline = performance.now() + 60_000; acknowledged.length < count && performance.now() < deadline; ) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    return { acknowledged, acknowledging, stop: async () => void ((stopped = true), await done) };
  }

  it('starts on a fresh folder with a generated password kept at mode 0600, and leaves nothing running after SIGTERM', async () => {
    env = { SVC_DATA_DIR: dataDir, PORT: String(await freePort()), LOG_LEVEL: 'warn', SVC_WORKERS: '0' };
    const server = await serve();
    apiKey = JSON.parse(readFileSync(join(dataDir, 'demo.json'), 'utf8')).workspaces[0].apiKey;
    // PostgreSQL refuses to run as root: a root svc runs it as another user, and says so once.
    if (process.getuid?.() === 0) expect(server.errors()).toContain(`The PostgreSQL server in ${join(dataDir, 'postgres')} runs as user nobody`);
    expect(readFileSync(join(dataDir, 'postgres.password'), 'utf8').trim()).toMatch(/^[\w-]{32}$/);
    expect(execFileSync('stat', ['-c', '%a', join(dataDir, 'postgres.password')], { encoding: 'utf8' }).trim()).toBe('600');
    const pid = serverPid(dataDir)!;
    expect(alive(pid)).toBe(true);
    // Listening on 127.0.0.1 only, and on no Unix socket.
    const lines = readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n');
    expect([lines[4], lines[5]]).toEqual(['', '127.0.0.1']);

    expect(await server.stop()).toBe(0);
    expect(alive(pid)).toBe(false);
    expect(processesOn(dataDir)).toEqual([]);
    expect(existsSync(join(dataDir, 'postgres', 'postmaster.pid'))).toBe(false);
  });

  it('keeps every acknowledged write when svc serve is killed during writes, and reuses the server it left', async () => {
    const server = await serve();
    const base = `http://127.0.0.1:${env.PORT}`;
    const pg = serverPid(dataDir)!;
    const writes = writeUntilStopped(base, 8);
    await writes.acknowledging(21);
    process.kill(server.pid, 'SIGKILL');
    await server.exited;
    await writes.stop();
    expect(writes.acknowledged.length).toBeGreaterThan(20);
    // The server outlives the service that started it...
    expect(alive(pg)).toBe(true);

    // ...and the next start takes it over, saying so in one line.
    const again = await serve();
    expect(again.errors()).toContain(`Reusing the PostgreSQL server (pid ${pg}) that an earlier svc left running on ${join(dataDir, 'postgres')}`);
    expect(serverPid(dataDir)).toBe(pg);
    for (const id of writes.acknowledged) expect((await request(`${base}/v1/products/${id}`, apiKey)).status, id).toBe(200);
    expect(await again.stop()).toBe(0);
    expect(alive(pg)).toBe(false);
  });

  it('keeps every acknowledged write when the service and its server are both killed', async () => {
    const server = await serve();
    const base = `http://127.0.0.1:${env.PORT}`;
    const pg = serverPid(dataDir)!;
    const writes = writeUntilStopped(base, 8);
    await writes.acknowledging(21);
    process.kill(server.pid, 'SIGKILL');
    process.kill(pg, 'SIGKILL');
    await server.exited;
    await writes.stop();
    expect(writes.acknowledged.length).toBeGreaterThan(20);

    // A postmaster.pid naming a dead process is left; the server starts again and recovers from its log.
    const again = await serve();
    expect(serverPid(dataDir)).not.toBe(pg);
    for (const id of writes.acknowledged) expect((await request(`${base}/v1/products/${id}`, apiKey)).status, id).toBe(200);
    expect(await again.stop()).toBe(0);
  });

  it('exits non-zero within seconds, saying why, when its server is killed under it; the next start recovers every acknowledged write', async () => {
    const server = await serve();
    const base = `http://127.0.0.1:${env.PORT}`;
    const pg = serverPid(dataDir)!;
    const writes = writeUntilStopped(base, 4);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const killed = performance.now();
    process.kill(pg, 'SIGKILL');
    const code = await Promise.race([server.exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 15_000))]);
    const exitMs = performance.now() - killed;
    await writes.stop();
    console.log(`embedded server killed: svc serve ${code === 'still running' ? 'still running after 15 s' : `exited ${code} after ${Math.round(exitMs)} ms`}`);
    expect(code).toBe(1);
    expect(exitMs).toBeLessThan(5_000);
    expect(server.errors()).toContain(`The PostgreSQL server (pid ${pg}) of ${join(dataDir, 'postgres')} stopped unexpectedly`);

    // A supervisor starts it again: the server recovers from its log.
    const again = await serve();
    for (const id of writes.acknowledged) expect((await request(`${base}/v1/products/${id}`, apiKey)).status, id).toBe(200);
    expect(await again.stop()).toBe(0);
  });

  it('refuses a data folder made by PGlite in one line, and changes nothing in it', async () => {
    const old = tempDataDir('svc-pglite-');
    try {
      mkdirSync(join(old, 'pglite'));
      writeFileSync(join(old, 'pglite', 'PG_VERSION'), '17\n');
      writeFileSync(join(old, 'master.key'), 'a'.repeat(64) + '\n');
      const before = readdirSync(old).sort();
      for (const args of [['serve', '--demo'], ['admin', 'list-users']]) {
        const result = await runCli(args, { SVC_DATA_DIR: old, PORT: String(await freePort()), LOG_LEVEL: 'warn' });
        expect(result.code, result.stderr).toBe(1);
        expect(result.stderr).toBe(
          `svc: ${old} holds the database of an earlier svc (PGlite, in ${join(old, 'pglite')}), which this version cannot open: ` +
            'move that folder away or set SVC_DATA_DIR to another folder to start afresh; nothing has been changed\n',
        );
      }
      expect(readdirSync(old).sort()).toEqual(before);
      expect(readFileSync(join(old, 'pglite', 'PG_VERSION'), 'utf8')).toBe('17\n');
    } finally {
      rmSync(old, { recursive: true, force: true });
    }
  });
});
