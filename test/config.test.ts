import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';

describe('delivery settings', () => {
  it('keeps the lease more than twice the delivery time-out', () => {
    expect(loadConfig({})).toMatchObject({ leaseMs: 60_000, deliveryTimeoutMs: 10_000 });
    expect(loadConfig({ SVC_LEASE: '21s' })).toMatchObject({ leaseMs: 21_000, deliveryTimeoutMs: 10_000 });
    expect(loadConfig({ SVC_LEASE: '5s', SVC_DELIVERY_TIMEOUT: '2s' })).toMatchObject({ leaseMs: 5_000, deliveryTimeoutMs: 2_000 });
    for (const env of [{ SVC_LEASE: '20s' }, { SVC_LEASE: '5s' }, { SVC_DELIVERY_TIMEOUT: '30s' }, { SVC_LEASE: '1m', SVC_DELIVERY_TIMEOUT: '30s' }]) {
      expect(() => loadConfig(env), JSON.stringify(env)).toThrow(ConfigError);
      expect(() => loadConfig(env), JSON.stringify(env)).toThrow(/SVC_LEASE .* must be more than twice SVC_DELIVERY_TIMEOUT/);
    }
  });
});

describe('rate-limit settings', () => {
  it('take credential limits up to a billion requests a minute, and no more', () => {
    expect(loadConfig({ SVC_RATE_LIMIT_API_KEY: '1000000000', SVC_RATE_LIMIT_PAT: '1000000000' })).toMatchObject({
      rateLimitApiKey: 1_000_000_000,
      rateLimitPat: 1_000_000_000,
    });
    expect(() => loadConfig({ SVC_RATE_LIMIT_API_KEY: '1000000001' })).toThrow(/SVC_RATE_LIMIT_API_KEY/);
    expect(() => loadConfig({ SVC_RATE_LIMIT_PAT: '1000000001' })).toThrow(/SVC_RATE_LIMIT_PAT/);
  });
});
