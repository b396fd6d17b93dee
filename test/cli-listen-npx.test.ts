import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from './helpers/app.js';
import { CLI, cleanEnv, cliBuilt, freePort, request, startServer, type Server } from './helpers/cli.js';
import { POSTGRES_URL } from './helpers/db.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Waits for `check`; `what` names it in the error, read when it is thrown (to show the output so far). */
async function until(what: string | (() => string), check: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * `npx svc listen` runs svc under a shell under npm. A SIGTERM to npm (what a script's `kill %1`
 * or a process manager sends) ends npm and its shell without passing the signal on: the listener
 * notices that its parent is gone and stops forwarding.
 */
describe('svc listen under npx', { timeout: 200_000 }, () => {
  let t: TestApp;
  let server: Server;
  let receiver: Receiver;
  let base: string;
  let apiKey: string;
  let group = 0;

  beforeAll(async () => {
    if (!cliBuilt()) throw new Error(`${CLI} is missing: build first (npm run build, or npm test)`);
    receiver = await startReceiver();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const masterKey = randomBytes(32);
    t = await startTestApp({ masterKey });
    apiKey = t.demo.workspaces[0].apiKey;
    const url = `${POSTGRES_URL}${POSTGRES_URL.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${t.testDb.schema}`)}`;
    server = await startServer([], { PORT: String(port), LOG_LEVEL: 'warn', DATABASE_URL: url, SVC_MASTER_KEY: masterKey.toString('hex') });
  });
  afterAll(async () => {
    if (group && alive(-group)) process.kill(-group, 'SIGKILL');
    await server?.stop();
    await receiver?.close();
    await t?.close();
  });

  const create = async (name: string) => {
    const res = await request(`${base}/v1/products`, apiKey, { method: 'POST', body: { name } });
    expect(res.status).toBe(201);
  };

  it('stops forwarding once npx is sent SIGTERM, leaving no process behind', async () => {
    const args = ['svc', 'listen', '--forward-to', `${receiver.url}/hooks`, '--events', 'product.created', '--base-url', base, '--json'];
    // A group of its own, so that whatever it leaves can be found by group.
    const npx = spawn('npx', args, { cwd: ROOT, env: cleanEnv({ SVC_API_KEY: apiKey }), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    group = npx.pid!;
    let output = '';
    npx.stdout!.on('data', (chunk: Buffer) => (output += chunk));
    npx.stderr!.on('data', (chunk: Buffer) => (output += chunk));
    const npxExited = new Promise<void>((resolve) => npx.once('exit', () => resolve()));

    await until(() => `"Ready!" (output so far: ${output.slice(-2000) || 'none'})`, () => output.includes('"ready":true'), 120_000);
    // The stream opens right after the banner: give it a moment before the first write.
    await new Promise((resolve) => setTimeout(resolve, 500));
    await create('Before the stop');
    await receiver.waitFor(1, 30_000);

    // npx's process only, as `kill PID` does: not its group.
    process.kill(npx.pid!, 'SIGTERM');
    await npxExited;
    // The listener (npm's grandchild) goes too, and nothing of the group is left.
    await until(`the listener to stop (${output})`, () => !alive(-group), 10_000);

    await create('After the stop');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(receiver.requests).toHaveLength(1);
  });
});
