import { afterEach, describe, expect, it } from 'vitest';
import { claimLocked } from '../../src/engine/delivery/claim.js';
import { Hold } from '../../src/engine/delivery/hold.js';
import type { Job, Holding } from '../../src/engine/delivery/job.js';
import { ClaimPosition, POSITION_MS } from '../../src/engine/delivery/position.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { addEndpoint, createProduct } from '../helpers/delivery.js';

const NO_LOCK: Holding = { finish() {}, drop() {} };
const job = (id: string, dueMs: number) => ({ id, mark: new Date(dueMs) }) as Job;

describe('claim position', () => {
  it('starts after the last row of a claim that took all it asked, in due order, then id', () => {
    const position = new ClaimPosition();
    expect(position.current(0)).toBeNull();
    position.took([job('whd_b', 2_000), job('whd_c', 2_000), job('whd_a', 1_000)], 3, 0);
    expect(position.current(10)).toEqual({ due: new Date(2_000), id: 'whd_c' });
  });

  it('goes back to the head after a short claim, when forgotten, and after POSITION_MS', () => {
    const position = new ClaimPosition();
    position.took([job('whd_a', 1_000)], 1, 0);
    position.took([job('whd_b', 1_000)], 2, 5);
    expect(position.current(5)).toBeNull();

    position.took([job('whd_a', 1_000)], 1, 10);
    position.forget();
    expect(position.current(10)).toBeNull();

    position.took([job('whd_a', 1_000)], 1, 20);
    // Moving on keeps the time it was first set: a row due before it waits POSITION_MS at most.
    position.took([job('whd_b', 1_000)], 1, 20 + POSITION_MS / 2);
    expect(position.current(20 + POSITION_MS)).toEqual({ due: new Date(1_000), id: 'whd_b' });
    expect(position.current(21 + POSITION_MS)).toBeNull();
  });

  describe('on the database', () => {
    const cleanup: (() => Promise<void>)[] = [];
    afterEach(async () => {
      for (const fn of cleanup.splice(0).reverse()) await fn();
    });

    async function claim(t: TestApp, limit: number, after: { due: Date; id: string } | null): Promise<Job[]> {
      const tx = await t.ctx.db.begin(Hold.SETTINGS);
      try {
        return await claimLocked(tx, NO_LOCK, t.clock.now(), limit, after);
      } finally {
        await tx.rollback();
      }
    }

    it('a claim after a position takes only the due rows after it', async () => {
      const t = await startTestApp({ config: { allowPrivateTargets: true } });
      cleanup.push(() => t.close());
      await addEndpoint(t, 'http://127.0.0.1:9/hook');
      for (let i = 0; i < 5; i++) await createProduct(t, `Hat ${i}`);
      const all = await claim(t, 10, null);
      expect(all).toHaveLength(5);

      const position = new ClaimPosition();
      position.took(all.slice(0, 2), 2, 0);
      const rest = await claim(t, 10, position.current(0));
      expect(rest.map((j) => j.id)).toEqual(all.slice(2).map((j) => j.id));
      // From the head again, every due row.
      expect((await claim(t, 10, null)).map((j) => j.id)).toEqual(all.map((j) => j.id));
    });
  });
});
