import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cleanEnv, cliBuilt, freePort, runCli, runJson, startServer, tempDataDir } from './helpers/cli.js';

async function until(what: string, check: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`${what} after ${ms} ms`);
    await sleep(100);
  }
}

/**
 * What a person at a terminal reads from `npm start` (svc serve --demo): the sign-in link first,
 * then one short line per request (JSON when the output is not a terminal or when asked); the
 * credentials and a new sign-in link printed again on demand, the link for the demo owner by default.
 */
describe('svc serve at a terminal, svc demo --show, svc admin dashboard-link without --user', { timeout: 300_000 }, () => {
  let dataDir: string;
  const env = () => ({ SVC_DATA_DIR: dataDir, LOG_LEVEL: 'info', SVC_WORKERS: '0' });
  const demo = () => JSON.parse(readFileSync(join(dataDir, 'demo.json'), 'utf8'));

  beforeAll(() => {
    if (!cliBuilt()) throw new Error(`${CLI} is missing: build first (npm run build)`);
    dataDir = tempDataDir('svc-terminal-');
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('on a terminal: the sign-in link right under the address, then one short line per request', async () => {
    const port = await freePort();
    // A real terminal: script(1) gives the server a pseudo-terminal as its output.
    const child = spawn('script', ['-qfec', `"${process.execPath}" "${CLI}" serve --demo`, '/dev/null'], {
      env: cleanEnv({ ...env(), PORT: String(port) }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString().replace(/\r/g, '')));
    const exited = new Promise((resolve) => child.on('exit', resolve));
    try {
      await until(`no banner: ${output}`, () => /Dashboard sign-in for .*\n.*\n/.test(output), 120_000);
      const lines = output.split('\n');
      const at = (pattern: RegExp) => lines.findIndex((l) => pattern.test(l));
      const listening = at(/^svc is listening on /);
      // The link is the first thing after the address, before the bare dashboard address.
      expect(lines[listening + 2]).toMatch(/^Dashboard sign-in for owner-\S+@example\.com \(one use, 10 minutes\): http:\/\/127\.0\.0\.1:\d+\/dashboard\/#code=\S{43}$/);
      expect(lines[listening + 3]).toBe('Another link: npx svc admin dashboard-link   (the credentials again: npx svc demo --show)');
      expect(at(/^Dashboard: /)).toBeGreaterThan(listening + 3);

      const base = `http://127.0.0.1:${port}`;
      const key = demo().workspaces[0].apiKey as string;
      expect((await fetch(`${base}/v1/products`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
      expect((await fetch(`${base}/v1/nothing-here`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(404);
      expect((await fetch(`${base}/dashboard/`)).status).toBe(200);
      await until(`no request lines: ${output}`, () => /GET \/v1\/nothing-here/.test(output));
      const logged = output.slice(output.indexOf('Try: curl')).split('\n').slice(1).filter(Boolean);
      expect(logged.filter((l) => l.includes('/v1/products'))).toEqual([expect.stringMatching(/^\d\d:\d\d:\d\d 200 GET \/v1\/products \d+ ms$/)]);
      expect(logged.filter((l) => l.includes('/v1/nothing-here'))).toEqual([expect.stringMatching(/^\d\d:\d\d:\d\d 404 GET \/v1\/nothing-here \d+ ms$/)]);
      // The dashboard's own files, loaded fine, are not worth a line; nothing is JSON; no key shows.
      expect(logged.filter((l) => l.includes('/dashboard/'))).toEqual([]);
      expect(logged.filter((l) => l.startsWith('{'))).toEqual([]);
      expect(output.split(key).length).toBe(3);
    } finally {
      // The server's own pid (serve.json): a signal to it, as Ctrl-C would give.
      const { pid } = JSON.parse(readFileSync(join(dataDir, 'serve.json'), 'utf8'));
      process.kill(pid, 'SIGTERM');
      await exited;
      // Its PostgreSQL server has stopped too before the next test starts one on the same folder.
      await until('PostgreSQL did not stop', () => !existsSync(join(dataDir, 'postgres', 'postmaster.pid')));
    }
  });

  it('prints the demo credentials again, and makes a sign-in link for the demo owner without --user', async () => {
    const shown = await runCli(['demo', '--show'], env());
    expect(shown.code).toBe(0);
    const set = demo();
    const owner = set.users.find((u: { role: string }) => u.role === 'owner');
    expect(shown.stdout).toContain(`API key:      ${set.workspaces[0].apiKey}`);
    expect(shown.stdout).toContain(owner.token);
    expect(shown.stdout).toContain(`Dashboard sign-in for ${owner.email}: npx svc admin dashboard-link`);
    expect(await runJson(['demo', '--show'], env())).toEqual(set);

    const server = await startServer(['--demo'], { ...env(), PORT: '0' });
    try {
      const link = await runJson(['admin', 'dashboard-link'], env());
      expect(link).toMatchObject({ email: owner.email, userId: owner.id });
      const { origin, hash } = new URL(link.url);
      const res = await fetch(`${origin}/v1/dashboard/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: hash.slice('#code='.length) }) });
      expect(res.status).toBe(201);
      // Not a terminal: the log is JSON lines, one object each.
      await fetch(`${origin}/v1/products`);
      await until('no request logged', () => /"url":"\/v1\/products"/.test(server.output()));
      const after = server.output().slice(server.output().indexOf('Try: curl')).split('\n').slice(1).filter(Boolean);
      for (const line of after) expect(() => JSON.parse(line), line).not.toThrow();
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('says what is missing: no demo to show, a log format it does not know', async () => {
    const empty = tempDataDir('svc-terminal-empty-');
    try {
      const none = await runCli(['demo', '--show'], { SVC_DATA_DIR: empty });
      expect([none.code, none.stdout]).toEqual([1, '']);
      expect(none.stderr.trim()).toBe(`svc: there is no demo in ${empty} (${join(empty, 'demo.json')}): npm start (svc serve --demo) seeds one on its first start`);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
    const bad = await runCli(['serve'], { ...env(), SVC_LOG_FORMAT: 'xml' });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('SVC_LOG_FORMAT must be json or lines, got "xml"');
  });
});
