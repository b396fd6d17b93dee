import { describe, expect, it } from 'vitest';
import type { Attempted, Job, Outcome } from '../../src/webhooks/engine/job.js';
import { INITIAL_SHARE, Lanes, type Throttle } from '../../src/webhooks/engine/lanes.js';

const job = (i: number, endpointId = 'whe_1') => ({ id: `whd_${endpointId}_${i}`, endpointId, endpointThrottled: false }) as unknown as Job;
const outcome = (fields: Partial<Attempted>) =>
  ({ kind: 'attempted', status: 'success', responseStatus: 200, timedOut: false, attemptedAt: new Date(), ...fields }) as Outcome;

function lanesOf(probation = 8) {
  const throttles: (Throttle | null)[] = [];
  const lanes = new Lanes({ maxShare: () => 64, probation: () => probation, throttled: (_id, t) => throttles.push(t) });
  lanes.defer = false;
  return { lanes, throttles };
}

/** Admits and starts `jobs` at `at` (performance.now() as the lanes see it); returns those that went. */
function offer(lanes: Lanes, jobs: Job[], at: number): Job[] {
  const went = jobs.filter((j) => lanes.offer(j, new Date(), at) === 'go');
  for (const j of went) lanes.started(j, at);
  return went;
}

/** Each endpoint's share of a worker, with the time given by the test. */
describe('lanes', () => {
  it('sends one probe to an endpoint never heard from; its first answer earns it a share, which grows with every answer', () => {
    const { lanes } = lanesOf();
    const jobs = Array.from({ length: 30 }, (_, i) => job(i));
    expect(offer(lanes, jobs, 0)).toEqual([jobs[0]]);
    const first = lanes.ended(jobs[0], outcome({}), 0, 50);
    expect(first).toHaveLength(INITIAL_SHARE);
    for (const j of first) lanes.started(j, 50);
    // A broker's acknowledgement (no HTTP status) is an answer too: one more in flight, so two go.
    expect(lanes.ended(first[0], outcome({ responseStatus: null }), 50, 60)).toHaveLength(2);
    // A connection refused is no answer: the share stays, only the freed place is taken.
    expect(lanes.ended(first[1], outcome({ status: 'pending', responseStatus: null, error: 'connection refused' }), 50, 60)).toHaveLength(1);
  });

  it('keeps a hanging endpoint to one attempt from the first claim, and endpoints on probation to their pool', () => {
    const { lanes } = lanesOf(4);
    const hanging = Array.from({ length: 6 }, (_, e) => Array.from({ length: 50 }, (_, i) => job(i, `whe_h${e}`)));
    const started = hanging.map((jobs) => offer(lanes, jobs, 0));
    // One probe for each of the first four; the pool is full for the other two.
    expect(started.map((s) => s.length)).toEqual([1, 1, 1, 1, 0, 0]);
    // A probe past a second holds its lane, no more a place of the pool: the others get theirs.
    const later = lanes.poll(1_001);
    expect(later.map((j) => j.endpointId)).toEqual(['whe_h4', 'whe_h5']);
    for (const j of later) lanes.started(j, 1_001);
    // A healthy endpoint never heard from still gets its probe beside them, and then its share.
    const healthy = Array.from({ length: 10 }, (_, i) => job(i, 'whe_ok'));
    expect(offer(lanes, healthy, 2_100)).toHaveLength(1);
    expect(lanes.ended(healthy[0], outcome({}), 2_100, 2_105)).toHaveLength(INITIAL_SHARE);
    // However long they hang, each hanging endpoint has one attempt in flight.
    expect(lanes.poll(20_000)).toEqual([]);
    // A time-out: still one probe at a time, the next of its jobs.
    const next = lanes.ended(hanging[0][0], outcome({ status: 'pending', responseStatus: null, timedOut: true }), 0, 10_000);
    expect(next).toEqual([hanging[0][1]]);
  });

  it('halves the share of an endpoint answering 429 or 503, shows it throttled, and gives it back as it answers again', () => {
    const { lanes, throttles } = lanesOf();
    const jobs = Array.from({ length: 400 }, (_, i) => job(i));
    let at = 0;
    const inFlight = offer(lanes, jobs, at);
    // Answers until the share is 16.
    while (inFlight.length < 16) {
      const j = inFlight.shift()!;
      const go = lanes.ended(j, outcome({}), at, ++at);
      for (const g of go) lanes.started(g, at);
      inFlight.push(...go);
    }
    expect(inFlight).toHaveLength(16);
    // 503, 429, 503: 8, 4, 2 in flight allowed.
    for (const status of [503, 429, 503]) {
      const j = inFlight.shift()!;
      const go = lanes.ended(j, outcome({ status: 'pending', responseStatus: status }), at, ++at);
      expect(go).toEqual([]);
    }
    expect(throttles.at(-1)?.share).toBe(2);
    expect(throttles[0]?.since).toBeInstanceOf(Date);
    // Answers again: each adds one to the share, until it is back where it was and the throttle ends.
    let answers = 0;
    while (throttles.at(-1) !== null && inFlight.length > 0) {
      const go = lanes.ended(inFlight.shift()!, outcome({}), at, ++at);
      for (const g of go) lanes.started(g, at);
      inFlight.push(...go);
      answers++;
    }
    expect(answers).toBe(14);
    expect(throttles.at(-1)).toBeNull();
  });
});
