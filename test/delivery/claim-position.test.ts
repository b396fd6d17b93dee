import { describe, expect, it } from 'vitest';
import { ClaimPosition, POSITION_MS } from '../../src/webhooks/engine/claim-position.js';
import type { Job } from '../../src/webhooks/engine/job.js';

/** Just what the position reads of a job: its id and its mark (the row's due time while taken). */
const job = (id: string, at: number) => ({ id, mark: new Date(at) }) as Job;

describe('where a busy worker\'s next held claim starts', () => {
  it('starts after the last row of a full claim, by due time then id, whatever order the rows came in', () => {
    const position = new ClaimPosition();
    expect(position.current(0)).toBeNull();
    position.took([job('whd_c', 1_000), job('whd_b', 2_000), job('whd_a', 2_000)], 3, 0);
    expect(position.current(1)).toEqual({ due: new Date(2_000), id: 'whd_b' });
    position.took([job('whd_d', 3_000), job('whd_e', 3_000)], 2, 10);
    expect(position.current(11)).toEqual({ due: new Date(3_000), id: 'whd_e' });
  });

  it('starts at the head after a claim that took fewer rows than it asked, or none', () => {
    const position = new ClaimPosition();
    position.took([job('whd_a', 1_000), job('whd_b', 1_000)], 2, 0);
    position.took([job('whd_c', 2_000)], 2, 1);
    expect(position.current(2)).toBeNull();
    position.took([job('whd_a', 1_000)], 1, 3);
    position.took([], 0, 4);
    expect(position.current(5)).toBeNull();
  });

  it('starts at the head once a position has been in use for POSITION_MS, and when told to forget it', () => {
    const position = new ClaimPosition();
    position.took([job('whd_a', 1_000)], 1, 0);
    // Full claims move the position on, but not its age: rows left behind wait POSITION_MS at most.
    position.took([job('whd_b', 2_000)], 1, POSITION_MS / 2);
    expect(position.current(POSITION_MS)).toEqual({ due: new Date(2_000), id: 'whd_b' });
    expect(position.current(POSITION_MS + 1)).toBeNull();
    position.took([job('whd_c', 3_000)], 1, POSITION_MS + 2);
    expect(position.current(POSITION_MS + 3)).toEqual({ due: new Date(3_000), id: 'whd_c' });
    position.forget();
    expect(position.current(POSITION_MS + 4)).toBeNull();
  });
});
