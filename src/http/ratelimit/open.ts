import type { Config } from '../../lib/config.js';
import { MemoryRateLimitStore } from './memory.js';
import { RedisRateLimitStore } from './redis.js';
import type { RateLimitStore } from './store.js';

/** Redis when `REDIS_URL` is set (shared by every API process), else this process's memory. */
export function openRateLimitStore(config: Config): RateLimitStore {
  if (!config.redisUrl) return new MemoryRateLimitStore();
  return new RedisRateLimitStore({
    url: config.redisUrl,
    prefix: `${config.redisKeyPrefix}rl:`,
    timeoutMs: config.redisTimeoutMs,
  });
}
