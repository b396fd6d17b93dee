import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpSender } from '../../src/engine/destinations/sender.js';

// The sender alone against a real server whose answers no well-behaved receiver would give.
describe('HttpSender', () => {
  let server: Server;
  let base: string;
  const timers = new Set<NodeJS.Timeout>();
  /** Bytes of the 50 MB body the server got to write before its connection was dropped, once it was. */
  let huge: Promise<number> | null = null;
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      if (req.url === '/huge') {
        huge = new Promise((resolve) => {
          const total = 50 * 1024 * 1024;
          const chunk = Buffer.alloc(64 * 1024, 'x');
          let written = 0;
          res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(total) });
          const more = () => {
            while (written < total && !res.destroyed) {
              written += chunk.length;
              if (!res.write(chunk)) return void res.once('drain', more);
            }
            if (written >= total) res.end();
          };
          res.on('close', () => resolve(written));
          more();
        });
        return;
      }
      if (req.url === '/trickle') {
        // Headers at once, then one byte every 50 ms for 2 s: each byte is "progress", the whole is late.
        res.writeHead(200, { 'content-type': 'text/plain' });
        let sent = 0;
        const timer = setInterval(() => {
          if (res.destroyed || sent++ >= 40) {
            clearInterval(timer);
            timers.delete(timer);
            res.end();
            return;
          }
          res.write('.');
        }, 50);
        timers.add(timer);
        return;
      }
      res.setHeader('x-many', ['a', 'b']);
      res.writeHead(202);
      res.end('accepted\u0000!');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const timer of timers) clearInterval(timer);
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('gives up at the deadline on a response that keeps trickling in', async () => {
    const sender = new HttpSender({ timeoutMs: 300, allowPrivateTargets: true });
    try {
      const started = Date.now();
      const result = await sender.send({ url: `${base}/trickle`, headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(result).toMatchObject({ ok: false, status: 200, body: null, error: 'timeout: no complete response within 300 ms' });
      expect(Date.now() - started).toBeLessThan(1500);
      expect(result.timeMs).toBeGreaterThanOrEqual(295);
    } finally {
      await sender.close();
    }
  });

  it('reads a 50 MB body only up to the part it keeps, then drops the connection', async () => {
    const sender = new HttpSender({ timeoutMs: 10_000, allowPrivateTargets: true });
    try {
      const started = performance.now();
      const result = await sender.send({ url: `${base}/huge`, headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(performance.now() - started).toBeLessThan(1_000);
      // Judged by its status; the body kept is the first 64 KiB.
      expect(result).toMatchObject({ ok: true, status: 200, error: null, timedOut: false });
      expect(result.body).toHaveLength(64 * 1024);
      // The server saw its connection closed long before it could send it all: socket buffers, not 50 MB.
      const written = await huge!;
      expect(written).toBeLessThan(10 * 1024 * 1024);
    } finally {
      await sender.close();
    }
  });

  it('records the status, joined repeated headers and the body, NUL replaced', async () => {
    const sender = new HttpSender({ timeoutMs: 2000, allowPrivateTargets: true });
    try {
      const result = await sender.send({ url: `${base}/ok?x=1`, headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(result).toMatchObject({ ok: true, status: 202, body: 'accepted\uFFFD!', error: null });
      expect(result.headers!['x-many']).toBe('a, b');
    } finally {
      await sender.close();
    }
  });
});
