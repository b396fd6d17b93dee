// CPU per row of a hold's statements, outside the worker: PostgreSQL's (the backend's own
// /proc/<pid>/schedstat, Linux) and this process's (process.cpuUsage), for the claim, the outcome
// write of successes and the commit, in claims of 64 rows without HTTP. For comparing a change to
// those statements in alternating runs: `node bench/claim-cost.mjs` after `npm run build`.
// ROUNDS=n claims (default 150, the first 10 not counted).
import { readFileSync } from 'node:fs';
import { freshSchema, PG_URL, seedBacklog } from './lib.mjs';
import { openSeeded, settle } from './service.mjs';
import { claimLocked } from '../dist/engine/delivery/claim.js';
import { writeHeldOutcomes } from '../dist/engine/delivery/outcome.js';
import { Hold } from '../dist/engine/delivery/hold.js';
import { createEndpoint } from '../dist/webhooks/endpoints/store.js';
import { SecretBox } from '../dist/lib/secretbox.js';

const N = 64;
const ROUNDS = Number(process.env.ROUNDS ?? 150);
const WARM_UP = 10;

const schema = await freshSchema();
const seeded = await openSeeded({ engine: 'postgres', url: schema.url, baseUrl: PG_URL, schema: schema.schema });
const db = seeded.db;
const box = new SecretBox(Buffer.alloc(32, 1));
const { row: endpoint } = await createEndpoint(db, box, { workspaceId: seeded.workspaceId, url: 'http://127.0.0.1:9/hook', subscribedEvents: ['product.*'] }, new Date());
await seedBacklog(db, seeded.workspaceId, [endpoint.id], N * ROUNDS, '00');
await db.query('ANALYZE');
await settle(db);

/** The backend's CPU time so far, in µs. */
const backendCpu = (pid) => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
const responseHeaders = { 'content-length': '2', 'content-type': 'text/plain', date: 'Wed, 25 Nov 2026 15:00:00 GMT', connection: 'keep-alive', 'keep-alive': 'timeout=5' };
const sums = { claim: 0, outcome: 0, commit: 0, clientClaim: 0, clientOutcome: 0 };
let rows = 0;
for (let round = 0; round < ROUNDS; round++) {
  const tx = await db.begin(Hold.SETTINGS);
  const [{ pid }] = await tx.query('SELECT pg_backend_pid() AS pid');
  const b0 = backendCpu(pid);
  const c0 = process.cpuUsage();
  const jobs = await claimLocked(tx, {}, new Date(Date.now() + 1000), N);
  const c1 = process.cpuUsage(c0);
  const b1 = backendCpu(pid);
  const now = new Date();
  const outcomes = jobs.map((job) => ({
    id: job.id, endpointId: job.endpointId, endpointFailures: 0, claimedAttempt: job.attempt, mark: job.mark, attempted: true,
    status: 'success', nextAttemptAt: null, attemptedAt: now, error: null, responseStatus: 200, responseTimeMs: 3,
    requestSignature: `v1,${'A'.repeat(43)}=`, requestHeaders: null, responseBody: 'ok', responseHeaders, timedOut: false,
  }));
  const c2 = process.cpuUsage();
  await writeHeldOutcomes(tx, outcomes);
  const c3 = process.cpuUsage(c2);
  const b2 = backendCpu(pid);
  await tx.commit();
  const b3 = backendCpu(pid);
  if (round < WARM_UP) continue;
  sums.claim += b1 - b0;
  sums.outcome += b2 - b1;
  sums.commit += b3 - b2;
  sums.clientClaim += c1.user + c1.system;
  sums.clientOutcome += c3.user + c3.system;
  rows += jobs.length;
}
const per = (v) => `${(v / rows).toFixed(2)} µs`;
console.log(`PostgreSQL per row: claim ${per(sums.claim)}, outcome ${per(sums.outcome)}, commit ${per(sums.commit)}`);
console.log(`this process per row: claim ${per(sums.clientClaim)}, outcome ${per(sums.clientOutcome)} (${rows} rows)`);
await db.close();
await schema.drop();
