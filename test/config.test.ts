import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/lib/config.js';

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

describe('database settings', () => {
  it('carry reads on one pipelined connection by default, and take 1 to 64', () => {
    expect(loadConfig({}).dbReadConnections).toBe(1);
    expect(loadConfig({ SVC_DB_READ_CONNECTIONS: '4' }).dbReadConnections).toBe(4);
    for (const value of ['0', '65', 'many', '-1']) {
      expect(() => loadConfig({ SVC_DB_READ_CONNECTIONS: value }), value).toThrow(/SVC_DB_READ_CONNECTIONS/);
    }
  });
});

describe('operations settings', () => {
  it('keep 30 days by default, everything with 0, and refuse a retention under an hour', () => {
    expect(loadConfig({}).retentionMs).toBe(30 * 86_400_000);
    expect(loadConfig({ SVC_RETENTION: '0' }).retentionMs).toBe(0);
    expect(loadConfig({ SVC_RETENTION: '90d' }).retentionMs).toBe(90 * 86_400_000);
    expect(loadConfig({ SVC_RETENTION: '12h' }).retentionMs).toBe(12 * 3_600_000);
    for (const value of ['30m', '30', 'forever', '-1d']) {
      expect(() => loadConfig({ SVC_RETENTION: value }), value).toThrow(/^SVC_RETENTION must be/);
    }
  });

  it('take a metrics token of 16 printable characters or more, and a metrics port', () => {
    expect(loadConfig({})).toMatchObject({ metricsToken: null, metricsPort: null });
    expect(loadConfig({ SVC_METRICS_TOKEN: 'a'.repeat(16), SVC_METRICS_PORT: '9464' })).toMatchObject({ metricsToken: 'a'.repeat(16), metricsPort: 9464 });
    for (const token of ['short', 'has a space in it here', 'x'.repeat(257)]) {
      expect(() => loadConfig({ SVC_METRICS_TOKEN: token })).toThrow(/^SVC_METRICS_TOKEN must be/);
    }
    expect(() => loadConfig({ SVC_METRICS_PORT: '70000' })).toThrow(/^SVC_METRICS_PORT must be/);
  });

  it('send pushes only over https to public hosts by default, with the operator contact a push service may use', () => {
    expect(loadConfig({}).allowPrivateTargets).toBe(false);
    expect(loadConfig({}).pushContact).toBe('mailto:webmaster@localhost');
    expect(loadConfig({ SVC_PUBLIC_URL: 'https://svc.example.com' }).pushContact).toBe('https://svc.example.com');
    expect(loadConfig({ SVC_PUBLIC_URL: 'https://svc.example.com', SVC_PUSH_CONTACT: 'mailto:ops@example.com' }).pushContact).toBe('mailto:ops@example.com');
    for (const value of ['http://svc.example.com', 'mailto:nobody', 'https://localhost', 'ops@example.com']) {
      expect(() => loadConfig({ SVC_PUSH_CONTACT: value }), value).toThrow(/^SVC_PUSH_CONTACT must be/);
    }
  });
});
