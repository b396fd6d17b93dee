import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Clock } from '../lib/clock.js';
import { withDeadline } from '../lib/deadline.js';

/** How an HTTP attempt at a receiver ended; a closed list, so the label stays small. */
export type AttemptOutcome = 'success' | 'http_error' | 'timeout' | 'network_error';

/** What an attempt reports: the sender's result (destinations/sender.ts SendResult) has these fields. */
export interface AttemptResult {
  ok: boolean;
  status: number | null;
  error: string | null;
  timeMs: number;
}

/**
 * What the delivery engine tells the metrics, from its hot path: each call is a few additions to
 * numbers held in memory, with no allocation of its own.
 */
export interface EngineMetrics {
  /** A request to a receiver is about to be sent. */
  attemptStarted(): void;
  /** That request ended (every attemptStarted is followed by exactly one attemptFinished). */
  attemptFinished(result: AttemptResult): void;
  /** An endpoint was disabled after its consecutive failures. */
  autoDisabled(): void;
  /** A worker's capacity (attempts it may have in flight) is now `limit`; null when it stopped. */
  capacity(worker: object, limit: number | null): void;
}

export function attemptOutcome(result: AttemptResult): AttemptOutcome {
  if (result.ok) return 'success';
  if (result.status !== null) return 'http_error';
  return result.error !== null && result.error.startsWith('timeout') ? 'timeout' : 'network_error';
}

/** The most due deliveries a scrape counts: the count is a range scan of the due index, bounded. */
export const DUE_COUNT_CAP = 100_000;

/** A scrape waits this long at most for the database; past it the due-delivery gauges are left out. */
const SCRAPE_QUERY_TIMEOUT_MS = 2000;

const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const ATTEMPT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Node.js process metrics (CPU, memory, event-loop delay, GC) belong to the process, not to one
 * context: they are collected once, into a registry of their own, however many contexts (tests)
 * the process builds.
 */
let processRegistry: Registry | null = null;

const UNCOUNTED_TOTALS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, eventLoopMonitoringPrecision: 10 });
    // Gauges named like counters, which `promtool check metrics` refuses; each is the sum of the
    // gauge of the same name without `_total`, by type (sum(nodejs_active_handles)).
    for (const name of UNCOUNTED_TOTALS) processRegistry.removeSingleMetric(name);
  }
  return processRegistry;
}

/** Records one HTTP response of a route: its status and its duration in seconds. */
export type RouteRecorder = (status: number, seconds: number) => void;

/**
 * The service's Prometheus metrics (docs/operations.md lists them): built once per context and
 * served by GET /metrics. Labels are route templates, methods, statuses, outcomes and table names,
 * never URLs or ids, so the number of series is bounded by the code, not by the traffic.
 */
/** What is read at scrape time, handed in by the process that owns the database. */
export interface MetricSources {
  poolStats(): { idle: number; total: number; waiting: number; max: number };
  /** Statements refused at once since the start, the database being known down. */
  refusedStatements(): number;
  /** Due deliveries (counted up to DUE_COUNT_CAP) and the oldest one's due time. */
  dueDeliveries(now: Date): Promise<{ due: number; oldest: Date | null }>;
}

export class Metrics implements EngineMetrics {
  readonly registry = new Registry();
  private readonly http: Histogram<'method' | 'route' | 'status'>;
  private readonly attempts: Counter<'outcome'>;
  private readonly attemptSeconds: Histogram<'outcome'>;
  private readonly inFlight: Gauge;
  private readonly capacities: Gauge;
  private readonly workerLimits = new Map<object, number>();
  private httpPaused = false;
  private readonly autoDisables: Counter;
  private readonly pushes: Counter<'outcome'>;
  private readonly retained: Counter<'table'>;
  private readonly due: Gauge;
  private readonly oldestDue: Gauge;
  private readonly pool: Gauge<'state'>;
  private readonly poolWaiting: Gauge;
  private readonly poolMax: Gauge;
  private readonly refused: Counter;
  /** Per outcome: the counter's and the histogram's child, resolved once. */
  private readonly byOutcome: Record<AttemptOutcome, { count: Counter.Internal; seconds: Histogram.Internal<string> }>;

  constructor(
    private readonly sources: MetricSources,
    private readonly clock: Clock,
  ) {
    const registers = [this.registry];
    this.http = new Histogram({
      name: 'svc_http_request_duration_seconds',
      help: 'HTTP requests by method, route template and status, from arrival to the last byte sent.',
      labelNames: ['method', 'route', 'status'],
      buckets: HTTP_BUCKETS,
      registers,
    });
    this.attempts = new Counter({ name: 'svc_webhook_attempts_total', help: 'HTTP requests made to webhook receivers, by outcome.', labelNames: ['outcome'], registers });
    this.attemptSeconds = new Histogram({
      name: 'svc_webhook_attempt_duration_seconds',
      help: 'Time of an attempt at a receiver, from before connecting to the last byte of its answer, by outcome.',
      labelNames: ['outcome'],
      buckets: ATTEMPT_BUCKETS,
      registers,
    });
    this.inFlight = new Gauge({ name: 'svc_webhook_attempts_in_flight', help: 'Requests to webhook receivers in flight in this process.', registers });
    this.capacities = new Gauge({
      name: 'svc_webhook_worker_capacity',
      help: 'Attempts the delivery workers of this process may have in flight, all together (SVC_WORKER_CONCURRENCY each, less while the process is overloaded).',
      registers,
    });
    this.autoDisables = new Counter({ name: 'svc_webhook_endpoint_auto_disables_total', help: 'Endpoints disabled after consecutive failed deliveries.', registers });
    this.pushes = new Counter({
      name: 'svc_push_messages_total',
      help: 'Web Push messages to users\' devices, by how they ended: sent, gone (the device was removed), failed (given up after the retries).',
      labelNames: ['outcome'],
      registers,
    });
    this.retained = new Counter({ name: 'svc_retention_deleted_rows_total', help: 'Rows deleted by retention (SVC_RETENTION) and by the clean-up of expired idempotency keys, by table.', labelNames: ['table'], registers });
    this.due = new Gauge({
      name: 'svc_webhook_deliveries_due',
      help: `Pending deliveries whose next attempt is due (counted up to ${DUE_COUNT_CAP}); the same for every process of a database.`,
      registers,
    });
    this.oldestDue = new Gauge({
      name: 'svc_webhook_oldest_due_delivery_age_seconds',
      help: 'How long the oldest due delivery has been waiting for its attempt (0 when none is due): the delivery lag.',
      registers,
    });
    this.pool = new Gauge({ name: 'svc_db_pool_connections', help: 'Database connections of this process, by state (idle, busy).', labelNames: ['state'], registers });
    this.poolWaiting = new Gauge({ name: 'svc_db_pool_waiting_requests', help: 'Queries waiting for a free database connection.', registers });
    this.poolMax = new Gauge({ name: 'svc_db_pool_max_connections', help: 'Largest number of database connections of this process.', registers });
    this.refused = new Counter({
      name: 'svc_db_refused_statements_total',
      help: 'Database statements refused at once because the database was known to be down (each outage is logged once).',
      registers,
    });
    const child = (outcome: AttemptOutcome) => ({ count: this.attempts.labels(outcome), seconds: this.attemptSeconds.labels(outcome) });
    this.byOutcome = { success: child('success'), http_error: child('http_error'), timeout: child('timeout'), network_error: child('network_error') };
    for (const outcome of Object.values(this.byOutcome)) outcome.count.inc(0);
    this.autoDisables.inc(0);
    for (const outcome of ['sent', 'gone', 'failed']) this.pushes.labels(outcome).inc(0);
  }

  attemptStarted(): void {
    this.inFlight.inc();
  }

  attemptFinished(result: AttemptResult): void {
    this.inFlight.dec();
    const outcome = this.byOutcome[attemptOutcome(result)];
    outcome.count.inc();
    outcome.seconds.observe(result.timeMs / 1000);
  }

  autoDisabled(): void {
    this.autoDisables.inc();
  }

  capacity(worker: object, limit: number | null): void {
    if (limit === null) this.workerLimits.delete(worker);
    else this.workerLimits.set(worker, limit);
    let sum = 0;
    for (const value of this.workerLimits.values()) sum += value;
    this.capacities.set(sum);
  }

  pushed(outcome: 'sent' | 'gone' | 'failed'): void {
    this.pushes.labels(outcome).inc();
  }

  retentionDeleted(table: string, rows: number): void {
    this.retained.inc({ table }, rows);
  }

  /** While paused, responses are not counted (the process's own warm-up requests, server/warm-up.ts). */
  pauseHttp(paused: boolean): void {
    this.httpPaused = paused;
  }

  /** A recorder for one route; its children are resolved once per status, not on every response. */
  route(method: string, route: string): RouteRecorder {
    const byStatus = new Map<number, Histogram.Internal<string>>();
    return (status, seconds) => {
      if (this.httpPaused) return;
      let child = byStatus.get(status);
      if (child === undefined) {
        child = this.http.labels(method, route, String(status));
        byStatus.set(status, child);
      }
      child.observe(seconds);
    };
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** The text exposition of every metric: the process's, then the service's, read at this moment. */
  async text(): Promise<string> {
    await this.refresh();
    return (await processMetrics().metrics()) + (await this.registry.metrics());
  }

  /** Values read at scrape time: the database pool and the due deliveries. */
  private async refresh(): Promise<void> {
    const stats = this.sources.poolStats();
    this.pool.set({ state: 'idle' }, stats.idle);
    this.pool.set({ state: 'busy' }, stats.total - stats.idle);
    this.poolWaiting.set(stats.waiting);
    this.poolMax.set(stats.max);
    this.refused.reset();
    this.refused.inc(this.sources.refusedStatements());
    try {
      const { due, oldest } = await withDeadline(this.sources.dueDeliveries(this.clock.now()), SCRAPE_QUERY_TIMEOUT_MS, 'the database');
      this.due.set(due);
      this.oldestDue.set(oldest ? Math.max(0, (this.clock.now().getTime() - oldest.getTime()) / 1000) : 0);
    } catch {
      // Unreachable or slow: no value rather than a stale one (GET /readyz says why).
      this.due.reset();
      this.oldestDue.reset();
    }
  }
}
