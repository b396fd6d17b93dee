import { describe, expect, it } from 'vitest';
import { startHostileApp } from './helpers/hostile-input.js';

/**
 * A body over the limit is refused before it is read; the server reads the rest of it and drops
 * it, so that a client still sending hears the 413 rather than a connection closed under it (EPIPE).
 */
describe('a body over the limit, sent whole by several clients at once', () => {
  it('is answered 413 PAYLOAD_TOO_LARGE to every client, over real sockets', async () => {
    const { t, key, port } = await startHostileApp();
    try {
      const body = JSON.stringify({ name: 'x', description: 'y'.repeat(2 * 1024 * 1024) });
      const outcomes: string[] = [];
      for (let round = 0; round < 10; round++) {
        const results = await Promise.all(
          Array.from({ length: 5 }, () =>
            fetch(`http://127.0.0.1:${port}/v1/products`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body }).then(
              async (res) => `${res.status} ${(await res.json()).error?.code}`,
              (error) => `error ${(error as { cause?: { code?: string } }).cause?.code ?? error}`,
            ),
          ),
        );
        outcomes.push(...results);
      }
      expect(outcomes.filter((o) => o !== '413 PAYLOAD_TOO_LARGE')).toEqual([]);
      expect(outcomes).toHaveLength(50);
    } finally {
      await t.close();
    }
  }, 120_000);
});
