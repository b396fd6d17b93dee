import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { TestApp } from './app.js';
import { POSTGRES_URL } from './db.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = `${ROOT}dist/cli/main.js`;

/**
 * `svc worker` as a real process against the test app's PostgreSQL schema, sharing its master key;
 * `env` adds or overrides settings. Killed with SIGKILL by `killAll` if still running.
 */
export function spawnWorker(t: TestApp, masterKey: Buffer, env: Record<string, string> = {}): ChildProcess & { stderrText(): string } {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first with npx tsc -p .`);
  const url = `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${t.testDb.schema}`)}`;
  const child = spawn(process.execPath, [CLI, 'worker'], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      DATABASE_URL: url,
      SVC_MASTER_KEY: masterKey.toString('hex'),
      SVC_ALLOW_PRIVATE_TARGETS: '1',
      SVC_WORKERS: '1',
      LOG_LEVEL: 'silent',
      ...env,
    },
  });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  child.stdout!.resume();
  return Object.assign(child, { stderrText: () => stderr });
}

export function killAll(children: ChildProcess[]): void {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}
