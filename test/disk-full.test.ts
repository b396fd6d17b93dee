import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cliBuilt, freePort, request, startServer } from './helpers/cli.js';

/** A size-limited tmpfs needs root; CI runs as root. */
const canMount = process.getuid?.() === 0;

/**
 * The embedded server's data folder on a small filesystem (a 256 MB tmpfs) that fills up: writes
 * answer 503 naming the folder, reads go on, nothing is half-written, and writes resume once space
 * is freed.
 */
describe.skipIf(!cliBuilt() || !canMount)('a full disk under the embedded server', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  it('refuses writes with 503 naming the folder, serves reads, and writes again once space is freed', async () => {
    const mount = mkdtempSync(join(tmpdir(), 'svc-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256m', 'tmpfs', mount]);
    cleanup.push(() => rmSync(mount, { recursive: true, force: true }));
    cleanup.push(() => void execFileSync('umount', ['-l', mount]));
    const dataDir = join(mount, 'data');
    const port = await freePort();
    const server = await startServer(['--demo'], { SVC_DATA_DIR: dataDir, PORT: String(port), SVC_RATE_LIMIT_API_KEY: '1000000', LOG_LEVEL: 'warn' });
    cleanup.push(async () => void (await server.stop()));
    const key = /API key:\s+(svc_sk_\S+)/.exec(server.output())![1];
    const base = `http://127.0.0.1:${port}`;
    const create = (i: number) => request(`${base}/v1/products`, key, { method: 'POST', body: { name: `Product ${i}`, description: 'x'.repeat(400) } });
    const count = async () => {
      let total = 0;
      let page: string | null = `${base}/v1/products?limit=100`;
      while (page) {
        const res = await request(page, key);
        expect(res.status).toBe(200);
        total += res.body.data.length;
        page = res.body.nextPageUrl;
      }
      return total;
    };
    expect((await create(0)).status).toBe(201);
    const before = await count();

    // Fill the filesystem but for 256 KB.
    const ballast = join(mount, 'ballast');
    const { bavail, bsize } = statfsSync(mount);
    execFileSync('fallocate', ['-l', String(bavail * bsize - 256 * 1024), ballast]);

    let created = 0;
    let refused: { status: number; body: { error: { code: string; message: string } } } | null = null;
    for (let i = 1; i <= 3000 && !refused; i++) {
      const res = await create(i);
      if (res.status === 201) created++;
      else refused = res;
    }
    expect(refused).not.toBeNull();
    expect(refused!.status).toBe(503);
    expect(refused!.body.error.code).toBe('UNAVAILABLE');
    expect(refused!.body.error.message).toContain(dataDir);
    // Reads go on, and every write answered 201 is there, no other.
    expect(await count()).toBe(before + created);

    rmSync(ballast);
    expect((await create(9999)).status).toBe(201);
    expect(await count()).toBe(before + created + 1);
  }, 120_000);
});
