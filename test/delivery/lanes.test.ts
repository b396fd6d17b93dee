import { describe, expect, it } from 'vitest';
import type { Attempted, Job, Outcome } from '../../src/engine/delivery/job.js';
import { INITIAL_SHARE, WAIT_UNKNOWN, type Throttle } from '../../src/engine/delivery/lane.js';
import { Lanes } from '../../src/engine/delivery/lanes.js';

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
  it('gives an endpoint never heard from its first attempts from the pool; its first answer earns it a share, which grows with every answer', () => {
    const { lanes } = lanesOf();
    const jobs = Array.from({ length: 30 }, (_, i) => job(i));
    expect(offer(lanes, jobs, 0)).toEqual(jobs.slice(0, INITIAL_SHARE));
    // The first answer ends its probation: its place is taken again, and the share grows from there.
    const first = lanes.ended(jobs[0], outcome({}), 0, 50);
    expect(first).toHaveLength(1);
    for (const j of first) lanes.started(j, 50);
    // A broker's acknowledgement (no HTTP status) is an answer too: one more in flight, so two go.
    expect(lanes.ended(jobs[1], outcome({ responseStatus: null }), 0, 60)).toHaveLength(2);
    // A connection refused is no answer: the share stays, only the freed place is taken.
    expect(lanes.ended(jobs[2], outcome({ status: 'pending', responseStatus: null, error: 'connection refused' }), 0, 60)).toHaveLength(1);
  });

  it('keeps endpoints on probation to their pool from the first claim, and a hanging endpoint that timed out to one probe', () => {
    const { lanes } = lanesOf(2 * INITIAL_SHARE);
    const hanging = Array.from({ length: 4 }, (_, e) => Array.from({ length: 50 }, (_, i) => job(i, `whe_h${e}`)));
    const started = hanging.map((jobs) => offer(lanes, jobs, 0));
    // INITIAL_SHARE each for the first two; the pool is full for the other two.
    expect(started.map((s) => s.length)).toEqual([INITIAL_SHARE, INITIAL_SHARE, 0, 0]);
    // Attempts past a second hold their lanes, no more places of the pool: the others get theirs.
    const later = lanes.poll(1_001);
    expect(later.map((j) => j.endpointId)).toEqual([...Array(INITIAL_SHARE).fill('whe_h2'), ...Array(INITIAL_SHARE).fill('whe_h3')]);
    for (const j of later) lanes.started(j, 1_001);
    // A healthy endpoint never heard from still gets its probe beside them, and then its share.
    const healthy = Array.from({ length: 10 }, (_, i) => job(i, 'whe_ok'));
    expect(offer(lanes, healthy, 2_100)).toHaveLength(INITIAL_SHARE);
    expect(lanes.ended(healthy[0], outcome({}), 2_100, 2_105)).toHaveLength(1);
    // However long they hang, each keeps what it has in flight and no more.
    expect(lanes.poll(20_000)).toEqual([]);
    // Time-outs: the endpoint is suspect, one probe at a time once its attempts have ended.
    for (let i = 0; i < INITIAL_SHARE - 1; i++) expect(lanes.ended(hanging[0][i], outcome({ status: 'pending', responseStatus: null, timedOut: true }), 0, 10_000)).toEqual([]);
    const next = lanes.ended(hanging[0][INITIAL_SHARE - 1], outcome({ status: 'pending', responseStatus: null, timedOut: true }), 0, 10_000);
    expect(next).toEqual([hanging[0][INITIAL_SHARE]]);
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

  it('moves the rest of an endpoint’s due rows with its first deferral, and defers its next jobs behind them', async () => {
    const moves: { after: number; step: number }[] = [];
    const lanes = new Lanes({
      maxShare: () => 64,
      probation: () => 8,
      throttled: () => {},
      moveBacklog: async (_id, _now, after, step) => {
        moves.push({ after: after.getTime(), step });
        return Array.from({ length: 500 }, (_, i) => ({ id: `whd_moved${i}`, at: new Date(after.getTime() + (i + 1) * step) }));
      },
    });
    const now = new Date(1_000_000);
    const jobs = Array.from({ length: 40 }, (_, i) => job(i));
    // It answered once, then its receiver stopped answering: its share in flight for two seconds, the rest deferred.
    offer(lanes, jobs.slice(0, 1), 0);
    lanes.ended(jobs[0], outcome({}), 0, 5);
    expect(offer(lanes, jobs.slice(1, 1 + INITIAL_SHARE), 10)).toHaveLength(INITIAL_SHARE);
    const turns = jobs.slice(1 + INITIAL_SHARE, 20).map((j) => lanes.offer(j, now, 2_010));
    const deferred = turns.filter((turn): turn is { deferUntil: Date } => typeof turn === 'object');
    expect(deferred.length).toBeGreaterThan(10);
    // One move for all of them, from the first deferral on, spaced as the deferrals are.
    expect(moves).toHaveLength(1);
    const step = deferred[1].deferUntil.getTime() - deferred[0].deferUntil.getTime();
    expect(moves[0]).toEqual({ after: deferred[0].deferUntil.getTime(), step });
    await Promise.resolve();
    // The next job deferred comes after the 500 rows moved; another move waits its turn.
    const next = lanes.offer(jobs[20], now, 2_020) as { deferUntil: Date };
    expect(next.deferUntil.getTime()).toBeGreaterThan(moves[0].after + 500 * step);
    expect(moves).toHaveLength(1);
    lanes.offer(jobs[21], now, 2_300);
    expect(moves).toHaveLength(2);
  });

  it('keeps sixteen jobs beside an endpoint never heard from, and defers the rest', () => {
    const lanes = new Lanes({ maxShare: () => 64, probation: () => 512, throttled: () => {} });
    const now = new Date(1_000_000);
    // Ten endpoints never heard from, thirty jobs each: each its probes, sixteen waiting, the rest deferred.
    for (let e = 0; e < 10; e++) {
      const turns = Array.from({ length: 30 }, (_, i) => lanes.offer(job(i, `whe_new${e}`), now, 0));
      expect(turns.filter((t) => t === 'go')).toHaveLength(INITIAL_SHARE);
      expect(turns.filter((t) => t === 'wait')).toHaveLength(WAIT_UNKNOWN);
    }
    expect(lanes.waitingCount()).toBe(10 * WAIT_UNKNOWN);
  });

  it('moves the backlogs of endpoints never heard from behind their verdict, and again once one turns out hanging', async () => {
    const moves: number[] = [];
    const again: [string, number][][] = [];
    const lanes = new Lanes({
      maxShare: () => 64,
      probation: () => 512,
      throttled: () => {},
      // Each move takes three rows; the last placed a second further on.
      moveBacklog: async (id, _now, after, step) => {
        moves.push(after.getTime() - now.getTime());
        return [1, 2, 500].map((n, i) => ({ id: `${id}_moved${i}`, at: new Date(after.getTime() + n * step) }));
      },
      moveRows: async (rows) => again.push(rows.map((r) => [r.id, r.later.getTime() - now.getTime()])),
    });
    const now = new Date(1_000_000);
    const hanging = Array.from({ length: 22 }, (_, i) => job(i, 'whe_hang'));
    const answering = Array.from({ length: 22 }, (_, i) => job(i, 'whe_ok'));
    // Each its four probes and sixteen waiting; two deferred at a healthy endpoint's pace, and the
    // backlog moved behind the time an attempt could have run 1 s unanswered, and a move's (1,250 ms).
    for (const jobs of [hanging, answering]) {
      expect(offer(lanes, jobs.slice(0, INITIAL_SHARE + WAIT_UNKNOWN), 0)).toHaveLength(INITIAL_SHARE);
      const deferred = jobs.slice(INITIAL_SHARE + WAIT_UNKNOWN).map((j) => lanes.offer(j, now, 0) as { deferUntil: Date });
      expect(deferred.map((turn) => turn.deferUntil.getTime() - now.getTime())).toEqual([2, 4]);
    }
    expect(moves).toEqual([1_250, 1_250]);
    await Promise.resolve();
    lanes.ended(answering[0], outcome({}), 0, 20);
    // Not suspect yet: nothing moves.
    lanes.review(new Date(now.getTime() + 900), 900);
    expect(again).toEqual([]);
    // The hanging one's probes have run past 1 s: the rows of its backlog that come due within half
    // a second go one attempt time apart, behind the last row it placed. The one that answered keeps
    // its backlog where it is.
    lanes.review(new Date(now.getTime() + 1_100), 1_100);
    expect(again).toEqual([
      [
        ['whe_hang_moved0', 1_256 + 1_100],
        ['whe_hang_moved1', 1_256 + 2_200],
      ],
    ]);
    lanes.review(new Date(now.getTime() + 1_200), 1_200);
    expect(again).toHaveLength(1);
    // The last comes within half a second at a later review; it goes behind the others.
    lanes.review(new Date(now.getTime() + 1_800), 1_800);
    expect(again[1]).toEqual([['whe_hang_moved2', 1_256 + 2_200 + 1_800]]);
    // Its backlog moved from now on is spaced at a suspect endpoint's pace already: none is kept.
    lanes.offer(job(30, 'whe_hang'), new Date(now.getTime() + 1_900), 1_900);
    await Promise.resolve();
    expect(moves).toHaveLength(3);
    lanes.review(new Date(now.getTime() + 8_800), 8_800);
    expect(again).toHaveLength(2);
  });
});

describe('deferrals by writes', () => {
  it('asks writes to defer the rows of a suspect endpoint that defers every job, at its pace behind its horizon, until it answers', () => {
    const { lanes } = lanesOf();
    lanes.defer = true;
    const jobs = Array.from({ length: 40 }, (_, i) => job(i, 'whe_h'));
    expect(offer(lanes, jobs.slice(0, 20), 0)).toHaveLength(INITIAL_SHARE);
    // Not suspect yet: its jobs wait or are deferred, and writes still hand its rows over.
    expect(lanes.deferrals(new Date(0), 500)).toEqual([]);
    // Its probes past a second unanswered: a job offered is deferred, and writes defer its rows from then on.
    const turn = lanes.offer(jobs[20], new Date(2_000), 2_000);
    expect(turn).toMatchObject({ deferUntil: expect.any(Date) });
    const [deferral] = lanes.deferrals(new Date(2_000), 2_000);
    expect(deferral).toMatchObject({ endpointId: 'whe_h', stepMs: 2_000 });
    expect(deferral.after.getTime()).toBe((turn as { deferUntil: Date }).deferUntil.getTime());
    // A write deferred three rows: the next job deferred comes after them.
    lanes.deferredRows(deferral, 3);
    const next = lanes.offer(jobs[21], new Date(2_000), 2_000) as { deferUntil: Date };
    expect(next.deferUntil.getTime()).toBe(deferral.after.getTime() + 4 * 2_000);
    // An answer earns it a share: no deferral any more.
    lanes.ended(jobs[0], outcome({}), 0, 2_100);
    expect(lanes.deferrals(new Date(2_100), 2_100)).toEqual([]);
  });
});
