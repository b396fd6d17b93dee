import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { MemoryRateLimitStore } from './memory.js';
import { decide, type RateLimitDecision, type RateLimitRule, type RateLimitStore, type StoreStatus } from './store.js';

/**
 * The sliding-window log of `MemoryRateLimitStore`, as one Lua script so that trimming, counting and
 * adding happen atomically for every API process sharing the Redis. The caller's clock time is
 * passed in (ARGV[1]) rather than read with TIME, so every process and every test agree on "now".
 * Scores are admission times in ms; members are unique per request. Returns
 * {allowed, count, oldest, unblock} where oldest/unblock are -1 when absent.
 */
const SLIDING_WINDOW = `
local key = KEYS[1]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
local allowed = count < limit
if allowed and ARGV[4] == '1' then
  redis.call('ZADD', key, now, ARGV[5])
  redis.call('PEXPIRE', key, window)
  count = count + 1
end
local oldest = -1
local unblock = -1
if count > 0 then
  oldest = tonumber(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2])
  if not allowed then
    unblock = tonumber(redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')[2])
  end
end
return {allowed and 1 or 0, count, oldest, unblock}
`;

export interface RedisStoreOptions {
  url: string;
  /** Prepended to every key, so deployments (and tests) sharing one Redis stay apart. */
  prefix: string;
  /** Connect and command time-out: a request never waits longer than this for Redis. */
  timeoutMs: number;
}

type ScriptClient = Redis & {
  slidingWindow(key: string, now: number, window: number, limit: number, consume: 0 | 1, member: string): Promise<[number, number, number, number]>;
};

/** Time between probes of a Redis that failed commands while its connection stayed up. */
const PROBE_INTERVAL_MS = 1000;

/**
 * Counters in Redis, shared by every API process. When Redis is unreachable or slow the service
 * keeps serving: each process counts in its own memory meanwhile (so the limit still holds per
 * process), reports the outage once, and goes back to Redis as soon as it answers again.
 */
export class RedisRateLimitStore implements RateLimitStore {
  private readonly client: ScriptClient;
  private readonly fallback = new MemoryRateLimitStore();
  private readonly listeners = new Set<(status: StoreStatus) => void>();
  private state: 'starting' | 'up' | 'down' = 'starting';
  private closing = false;
  private probing = false;
  private lastProbe = -Infinity;
  private readonly instance = randomBytes(6).toString('base64url');
  private seq = 0;

  constructor(private readonly options: RedisStoreOptions) {
    this.client = new Redis(options.url, {
      // Connect on first use, so commands that never count requests (the CLI) never open a socket.
      lazyConnect: true,
      connectTimeout: options.timeoutMs,
      commandTimeout: options.timeoutMs,
      // Fail at once while disconnected instead of queueing the request behind a reconnect.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      // Keep trying for ever, at most a second apart, so the service recovers on its own.
      retryStrategy: (times) => Math.min(times * 100, 1000),
    }) as ScriptClient;
    this.client.defineCommand('slidingWindow', { numberOfKeys: 1, lua: SLIDING_WINDOW });
    this.client.on('ready', () => this.markUp());
    this.client.on('error', (error: Error) => this.markDown(error));
    this.client.on('close', () => this.markDown(new Error('connection closed')));
  }

  /** Calls `listener` on every change between reachable and unreachable; returns an unsubscribe. */
  onStatus(listener: (status: StoreStatus) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** True while counters go to Redis (false while starting or during an outage). */
  get shared(): boolean {
    return this.state === 'up' && this.client.status === 'ready';
  }

  async hit(key: string, rule: RateLimitRule, nowMs: number, consume = true): Promise<RateLimitDecision> {
    if (!this.shared) {
      if (this.client.status === 'wait') this.client.connect().catch(() => {});
      this.probe();
      return this.fallback.hitSync(key, rule, nowMs, consume);
    }
    try {
      const member = `${nowMs}:${this.instance}:${this.seq++}`;
      const [allowed, count, oldest, unblock] = await this.client.slidingWindow(
        this.options.prefix + key, nowMs, rule.windowMs, rule.limit, consume ? 1 : 0, member,
      );
      return decide(rule, nowMs, allowed === 1, count, oldest < 0 ? null : oldest, unblock < 0 ? null : unblock);
    } catch (error) {
      this.markDown(error as Error);
      return this.fallback.hitSync(key, rule, nowMs, consume);
    }
  }

  /** Resolves once counters go to Redis (connecting first if needed): for start-up and tests. */
  async waitShared(): Promise<void> {
    while (!this.shared) {
      if (this.client.status === 'wait') this.client.connect().catch(() => {});
      this.probe();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /**
   * Resolves when Redis answers a PING within the time-out, connecting first if no request has yet.
   * A connection still being made gets the time-out to come up.
   */
  async ping(): Promise<void> {
    if (this.client.status === 'wait') this.client.connect().catch(() => {});
    const deadline = performance.now() + this.options.timeoutMs;
    while (this.client.status !== 'ready' && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    await this.client.ping();
  }

  /**
   * While the connection is up but Redis failed a command (no answer in time, or an error such as a
   * read-only replica), one probe at a time runs the script itself, without counting, to find out
   * when counting there works again.
   */
  private probe(): void {
    if (this.state !== 'down' || this.probing || this.client.status !== 'ready') return;
    if (performance.now() - this.lastProbe < PROBE_INTERVAL_MS) return;
    this.probing = true;
    this.lastProbe = performance.now();
    this.client
      .slidingWindow(`${this.options.prefix}probe`, 0, 1, 1, 0, '')
      .then(() => this.markUp())
      .catch(() => {})
      .finally(() => {
        this.probing = false;
      });
  }

  private markUp(): void {
    if (this.closing || this.state === 'up') return;
    const wasDown = this.state === 'down';
    this.state = 'up';
    if (wasDown) this.emit({ state: 'up' });
  }

  private markDown(error: Error): void {
    if (this.closing || this.state === 'down') return;
    this.state = 'down';
    this.emit({ state: 'down', reason: describe(error, this.options.url) });
  }

  private emit(status: StoreStatus): void {
    for (const listener of this.listeners) listener(status);
  }

  async close(): Promise<void> {
    this.closing = true;
    this.listeners.clear();
    this.client.disconnect();
    await this.fallback.close();
  }
}

/** A short reason for the log: the error's code and message, never the URL's credentials. */
function describe(error: Error, url: string): string {
  const code = (error as { code?: string }).code;
  let text = code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  const { password, username } = new URL(url);
  for (const secret of [password, username]) {
    if (secret) text = text.split(decodeURIComponent(secret)).join('***').split(secret).join('***');
  }
  return text;
}
