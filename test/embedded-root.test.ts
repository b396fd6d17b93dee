import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, cliBuilt, freePort, runCli, runShell, startServer } from './helpers/cli.js';

const root = process.getuid?.() === 0;
if (!root) console.warn('Not run: the first start as root (test/embedded-root.test.ts), which needs this run to be root');

/**
 * A first start as root (a container's default user): PostgreSQL runs as `nobody`, who must be able
 * to pass through every folder on the way to the data folder. In a clone that only root may enter,
 * the start is refused with the folder and the command that opens it, and leaves nothing behind, so
 * that after that command the next start works as is.
 */
describe.skipIf(!root)('the first start as root', { timeout: 180_000 }, () => {
  const clones: string[] = [];
  afterAll(() => {
    for (const clone of clones) {
      try {
        const left = Number(readFileSync(join(clone, 'data', 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
        if (left > 0) process.kill(left, 'SIGQUIT');
      } catch {
        // None running.
      }
      rmSync(clone, { recursive: true, force: true });
    }
  });

  /** A folder as a fresh clone under /root is: owned by root, mode 0700. */
  const clone = () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-root-clone-'));
    chmodSync(dir, 0o700);
    clones.push(dir);
    return dir;
  };

  it('names the folder and the chmod that opens it, leaves nothing, and starts after that chmod', async () => {
    if (!cliBuilt()) throw new Error(`${CLI} is missing: build first (npm run build, or npm test)`);
    const dir = clone();
    const env = { SVC_DATA_DIR: join(dir, 'data'), PORT: String(await freePort()), LOG_LEVEL: 'warn', SVC_WORKERS: '0' };

    let refused = { code: 0 as number | null, stderr: '' };
    for (let attempt = 0; attempt < 2; attempt++) {
      refused = await runCli(['serve'], env);
      expect(refused.code, refused.stderr).toBe(1);
      const lines = refused.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`nobody cannot pass through ${dir} (mode 0700, owner uid 0)`);
      expect(lines[0]).toContain(`run chmod o+x ${dir}`);
      expect(lines[0]).toContain('nothing was created');
      // Not a trace of the attempt: the second one says the same, not EEXIST.
      expect(readdirSync(dir)).toEqual([]);
    }

    // What the message says to do, as typed.
    const command = /run (chmod o\+x \S+) \(/.exec(refused.stderr)![1];
    const chmod = await runShell(command, {}, tmpdir());
    expect(chmod.code).toBe(0);
    const server = await startServer(['--demo'], env);
    try {
      expect(server.errors()).toContain(`The PostgreSQL server in ${join(dir, 'data', 'postgres')} runs as user nobody`);
      const health = await fetch(`http://127.0.0.1:${env.PORT}/readyz`);
      expect(health.status).toBe(200);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('takes over the empty server folder that an earlier version left after a refused start', async () => {
    if (!cliBuilt()) throw new Error(`${CLI} is missing: build first (npm run build, or npm test)`);
    const dir = clone();
    chmodSync(dir, 0o711);
    mkdirSync(join(dir, 'data', 'postgres'), { recursive: true });
    const env = { SVC_DATA_DIR: join(dir, 'data'), PORT: String(await freePort()), LOG_LEVEL: 'warn', SVC_WORKERS: '0' };
    const server = await startServer([], env);
    try {
      expect(existsSync(join(dir, 'data', 'postgres', 'PG_VERSION'))).toBe(true);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
