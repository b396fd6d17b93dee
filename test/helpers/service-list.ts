import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

export type Service = 'redis' | 'rabbitmq' | 'nats' | 'chromium';

/** Chromium: CHROMIUM_PATH, else `chromium` (or `chromium-browser`) on PATH; null when there is none. */
export function chromiumPath(): string | null {
  if (process.env.CHROMIUM_PATH) return process.env.CHROMIUM_PATH;
  for (const dir of (process.env.PATH ?? '').split(delimiter).filter(Boolean)) {
    for (const name of ['chromium', 'chromium-browser']) {
      try {
        accessSync(join(dir, name), constants.X_OK);
        return join(dir, name);
      } catch {
        // Not here.
      }
    }
  }
  return null;
}

/**
 * What some test files need beside PostgreSQL, and the setting that says where it is. A file
 * declares what it needs with `describe.skipIf(missing('rabbitmq'))` (services.ts); the run's setup
 * (services-setup.ts) probes each once, and names what it did not run.
 */
export const SERVICES: Record<Service, { name: string; setting: string; where: () => string }> = {
  redis: { name: 'Redis', setting: 'TEST_REDIS_URL', where: () => process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379' },
  rabbitmq: { name: 'RabbitMQ', setting: 'RABBITMQ_URL', where: () => process.env.RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672/' },
  nats: { name: 'NATS (JetStream)', setting: 'NATS_URL', where: () => process.env.NATS_URL ?? 'nats://127.0.0.1:4222' },
  chromium: { name: 'Chromium', setting: 'CHROMIUM_PATH', where: () => chromiumPath() ?? 'chromium on PATH' },
};

