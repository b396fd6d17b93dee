import { describe, expect, it } from 'vitest';
import type { Job, Outcome } from '../../src/webhooks/engine/job.js';
import { INITIAL_SHARE, Lanes } from '../../src/webhooks/engine/lanes.js';

const job = (i: number) => ({ id: `whd_${i}`, endpointId: 'whe_1', endpointThrottled: false }) as unknown as Job;
const outcome = (fields: Partial<Outcome>) =>
  ({ attempted: true, status: 'success', responseStatus: null, timedOut: false, attemptedAt: new Date(), ...fields }) as Outcome;

/** An endpoint's share grows with every answer, a broker's acknowledgement (no HTTP status) included. */
describe('lanes', () => {
  it('grows the share on a broker acknowledgement, not on a failure without an answer', () => {
    const lanes = new Lanes({ maxShare: () => 64, throttled: () => {} });
    lanes.defer = false;
    const jobs = Array.from({ length: 20 }, (_, i) => job(i));
    const admitted = jobs.map((j) => lanes.admit(j, new Date(), 0));
    expect(admitted.filter((a) => a === 'go')).toHaveLength(INITIAL_SHARE);
    for (const j of jobs.slice(0, INITIAL_SHARE)) lanes.started(j, 0);

    // A publish the broker confirmed: one more in flight allowed, so two waiting jobs go.
    expect(lanes.ended(jobs[0], outcome({}), 0, 5)).toHaveLength(2);
    // A connection refused: no answer, the share stays, so only the freed place is taken.
    expect(lanes.ended(jobs[1], outcome({ status: 'pending', error: 'connection refused' }), 0, 5)).toHaveLength(1);
    // An HTTP answer, even a failing one, grows it as before.
    expect(lanes.ended(jobs[2], outcome({ status: 'pending', responseStatus: 500 }), 0, 5)).toHaveLength(2);
  });
});
