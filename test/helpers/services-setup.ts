import { accessSync, constants, readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { chromiumPath, SERVICES, type Service } from './service-list.js';

const TEST_DIR = fileURLToPath(new URL('..', import.meta.url));

/** Whether something accepts a TCP connection at the URL's host and port, within a second. */
function answers(url: string, defaultPort: number): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname.replace(/^\[|\]$/g, ''), port: Number(port || defaultPort), timeout: 1_000 });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
    socket.once('timeout', () => done(false));
  });
}

function executable(path: string | null): boolean {
  if (!path) return false;
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The test files that declare `missing('<service>')`. */
function filesNeeding(service: Service): string[] {
  const files = readdirSync(TEST_DIR, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.test.ts'));
  return files.filter((f) => readFileSync(join(TEST_DIR, f), 'utf8').includes(`missing('${service}')`)).map((f) => join('test', f)).sort();
}

/**
 * Vitest's global setup: probes Redis, RabbitMQ, NATS and Chromium once. A missing one's tests are
 * skipped, with one line per service saying what was not run; with SVC_TEST_REQUIRE=all (CI sets
 * it), or a comma-separated list of services, a missing one fails the run instead.
 */
export default async function setup(project: TestProject): Promise<void> {
  const probes: Record<Service, Promise<boolean>> = {
    redis: answers(SERVICES.redis.where(), 6379),
    rabbitmq: answers(SERVICES.rabbitmq.where(), 5672),
    nats: answers(SERVICES.nats.where(), 4222),
    chromium: Promise.resolve(executable(chromiumPath())),
  };
  const services = Object.fromEntries(await Promise.all(Object.entries(probes).map(async ([k, p]) => [k, await p]))) as Record<Service, boolean>;
  project.provide('services', services);

  const required = (process.env.SVC_TEST_REQUIRE ?? '').split(',').map((s) => s.trim().toLowerCase());
  const absent = (Object.keys(services) as Service[]).filter((s) => !services[s]);
  const line = (s: Service) => {
    const { name, setting, where } = SERVICES[s];
    const absence = s === 'chromium' ? 'is not there' : 'does not answer';
    return `${name} (${setting}: ${where()}) ${absence}: not run: ${filesNeeding(s).join(', ') || 'nothing'}`;
  };
  const fatal = absent.filter((s) => required.includes('all') || required.includes(s));
  if (fatal.length) throw new Error(`SVC_TEST_REQUIRE=${process.env.SVC_TEST_REQUIRE}, and ${fatal.map(line).join('; ')}`);
  for (const s of absent) console.warn(`Skipped: ${line(s)}`);
}
