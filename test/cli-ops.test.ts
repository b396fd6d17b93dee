import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server as NetServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cliBuilt, freePort, request, runCli, runJson, runShell, startCommand, startServer, tempDataDir, type CliResult } from './helpers/cli.js';

/** Asserts a failed command: the exit status and exactly one line on stderr, with no stack trace and no SQL. */
function failedWith(result: CliResult, code: number, line: string): void {
  expect(result.stderr, result.stderr).toBe(`svc: ${line}\n`);
  expect(result.code).toBe(code);
  expect(result.stdout).toBe('');
}

/**
 * The built `svc` as an operator meets it, run as processes on the embedded default (a data folder):
 * the demo set, listings, one-line failures, the master key, and one PostgreSQL shared by commands.
 */
describe('svc for operators', { timeout: 300_000 }, () => {
  let dataDir: string;
  let env: Record<string, string>;
  let port: number;
  /** The demo set of the first test, which later tests build on. */
  let demo: any;

  beforeAll(async () => {
    if (!cliBuilt()) throw new Error(`${CLI} is missing: build first (npx tsc -p . or npm test)`);
    dataDir = tempDataDir('svc-ops-');
    port = await freePort();
    env = { SVC_DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn', SVC_WORKERS: '0' };
  }, 120_000);

  afterAll(async () => {
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('svc demo prints readable text with the real base URL, --json for scripts, and seeds data the printed curl shows', async () => {
    const text = await runCli(['demo'], env);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).not.toMatch(/^[{[]/);
    expect(text.stdout).toMatch(/^Demo organization "Acme Inc\." \(org_\w+\)\n/);
    expect(text.stdout).toMatch(/sample data: +3 products; order ord_\w+; webhook endpoint whe_\w+ \(paused, secret whsec_\w+\)/);
    const curl = /Try: curl -H "Authorization: Bearer (svc_sk_\w+)" (\S+)\/v1\/products\n$/.exec(text.stdout)!;
    expect(curl[2]).toBe(`http://127.0.0.1:${port}`);

    demo = await runJson(['demo'], { ...env, SVC_PUBLIC_URL: 'https://api.example.com' });
    expect(demo.baseUrl).toBe('https://api.example.com');
    expect(demo.sample.products).toHaveLength(3);
    expect(demo.sample.order).toMatchObject({ id: expect.stringMatching(/^ord_/), amountTotal: 2 * 2400 + 5900, currency: 'EUR' });
    expect(demo.sample.webhookEndpoint).toMatchObject({ active: false, secret: expect.stringMatching(/^whsec_/) });

    const server = await startServer([], env);
    try {
      const at = (path: string) => `http://127.0.0.1:${port}${path}`;
      const products = await request(at('/v1/products'), curl[1]);
      expect(products.body.data.map((p: { name: string }) => p.name)).toEqual(['Gift card', 'Pour-over kettle', 'Espresso beans, 1 kg']);
      const orders = await request(at('/v1/orders?expand=lineItems'), curl[1]);
      expect(orders.body.data).toMatchObject([{ status: 'pending', amountTotal: 2 * 2400 + 5900, lineItems: [{ name: 'Espresso beans, 1 kg', quantity: 2 }, { name: 'Pour-over kettle', quantity: 1 }] }]);
      const endpoints = await request(at('/v1/webhooks/endpoints'), curl[1]);
      expect(endpoints.body.data).toMatchObject([{ active: false, disabledReason: 'manual' }]);
      // Each product's and the order's event waits as a disabled delivery, to replay once the endpoint points somewhere real.
      const deliveries = await request(at('/v1/webhooks/deliveries'), curl[1]);
      expect(deliveries.body.data.map((d: { status: string; eventType: string }) => `${d.eventType} ${d.status}`)).toEqual([
        'order.created disabled',
        ...Array(3).fill('product.created disabled'),
      ]);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('lists users, organizations, workspaces and API keys', async () => {
    const orgs = (await runJson(['admin', 'list-orgs'], env)).data;
    expect(orgs.map((o: { id: string }) => o.id)).toEqual(expect.arrayContaining([demo.organization.id, demo.outsiderOrganization.id]));
    const workspaces = (await runJson(['admin', 'list-workspaces', '--org', demo.organization.id], env)).data;
    expect(workspaces.map((w: { slug: string }) => w.slug).sort()).toEqual(['staging', 'store']);
    const keys = (await runJson(['admin', 'list-api-keys', '--workspace', demo.workspaces[0].id], env)).data;
    expect(keys.map((k: { name: string; test: boolean }) => [k.name, k.test]).sort()).toEqual([['Demo key', false], ['Demo test key', true]]);
    expect(JSON.stringify(keys)).not.toContain(demo.workspaces[0].apiKey);
    const users = await runCli(['admin', 'list-users'], env);
    expect(users.code).toBe(0);
    const [header, ...rows] = users.stdout.trimEnd().split('\n');
    expect(header.split(/\s+/)).toEqual(['id', 'email', 'name', 'createdAt']);
    for (const user of demo.users) expect(rows.some((row) => row.startsWith(`${user.id}  `) && row.includes(user.email))).toBe(true);
  });

  it('fails in one line, with a non-zero status, no stack trace and no SQL', async () => {
    const [user] = demo.users;
    const org = demo.organization;
    const rows: [string[], number, string][] = [
      [['admin', 'create-api-key', '--workspace', 'wsp_nope', '--name', 'x'], 1, 'there is no workspace "wsp_nope"'],
      [['admin', 'create-workspace', '--org', 'org_nope', '--slug', 's', '--name', 'n'], 1, 'there is no organization "org_nope"'],
      [['admin', 'add-member', '--user', 'usr_nope', '--org', org.id, '--role', 'admin'], 1, 'there is no user "usr_nope"'],
      [['admin', 'add-member', '--user', user.id, '--workspace', 'wsp_nope', '--role', 'viewer'], 1, 'there is no workspace "wsp_nope"'],
      [['admin', 'create-token', '--user', 'usr_nope', '--name', 'x'], 1, 'there is no user "usr_nope"'],
      [['admin', 'list-workspaces', '--org', 'org_nope'], 1, 'there is no organization "org_nope"'],
      [['admin', 'revoke-api-key', '--id', 'key_nope'], 1, 'there is no API key "key_nope" (list them with svc admin list-api-keys)'],
      [['admin', 'create-user', '--email', user.email, '--name', 'Again'], 1, `a user with the e-mail address ${user.email} already exists`],
      [['admin', 'create-org', '--slug', org.slug, '--name', 'Again'], 1, `an organization with the slug "${org.slug}" already exists`],
      [['admin', 'create-workspace', '--org', org.id, '--slug', 'store', '--name', 'Again'], 1, `organization ${org.id} already has a workspace with the slug "store"`],
      [['admin', 'create-user', '--email', 'notanemail', '--name', 'x'], 2, '--email must be an e-mail address such as ada@example.com, got "notanemail"'],
      [['admin', 'create-user', '--email', 'a@b', '--name', 'x'], 2, '--email must be an e-mail address such as ada@example.com, got "a@b"'],
      [['admin', 'rotate-master-key', '--new', 'short'], 2, '--new must be 32 bytes written as 64 hex characters or base64 (make one with svc admin master-key)'],
    ];
    for (const [args, code, line] of rows) failedWith(await runCli(args, env), code, line);

    const unreachable = { ...env, DATABASE_URL: 'postgres://someone:hunter2@127.0.0.1:1/none', SVC_MASTER_KEY: randomBytes(32).toString('hex') };
    for (const args of [['admin', 'list-users'], ['migrate'], ['serve']]) {
      failedWith(await runCli(args, unreachable), 1, 'cannot use the database at 127.0.0.1:1: connection refused; check DATABASE_URL and that PostgreSQL is running');
    }

    const taken: NetServer = createServer();
    const busy = await freePort();
    await new Promise<void>((resolve) => taken.listen(busy, '127.0.0.1', resolve));
    try {
      failedWith(await runCli(['serve'], { ...env, PORT: String(busy) }), 1, `127.0.0.1:${busy} is already in use by another process; stop it, or set PORT (or SVC_METRICS_PORT) to a free port`);
    } finally {
      taken.close();
    }
  });

  it('refuses a wrong master key at start in one line, and rotates every secret to a new one', async () => {
    const keyFile = join(dataDir, 'master.key');
    const current = readFileSync(keyFile, 'utf8').trim();
    const source = `the master key in ${keyFile}`;
    const refusal = `${source} is not the master key this database's secrets are encrypted with: start with the key it was set up with (to change keys, run svc admin rotate-master-key --new KEY with the current one)`;
    /** The environment of a process started with `key`, written to the data folder's key file. */
    const withKey = (key: string) => {
      writeFileSync(keyFile, `${key}\n`);
      return env;
    };

    const stranger = randomBytes(32).toString('hex');
    failedWith(await runCli(['serve'], withKey(stranger)), 2, refusal);
    failedWith(await runCli(['admin', 'list-users'], withKey(stranger)), 2, refusal);

    // As docs/operations.md writes it: a new key into a file, then read from standard input, so it
    // shows in no process list.
    const made = await runShell('svc admin master-key > new.key', {}, dataDir);
    expect(made).toMatchObject({ code: 0, stdout: '', stderr: '' });
    const next = readFileSync(join(dataDir, 'new.key'), 'utf8').trim();
    expect(next).toMatch(/^[0-9a-f]{64}$/);
    const rotated = await runShell('svc admin rotate-master-key --new - --json < new.key', withKey(current), dataDir);
    expect(rotated.code, rotated.stderr).toBe(0);
    const result = JSON.parse(rotated.stdout);
    expect(result.rotated).toBe(true);
    expect(result.reencrypted['webhook_endpoints.secret_enc']).toBeGreaterThanOrEqual(2);
    // The VAPID key pair made at the first start is sealed under the key too.
    expect(result.reencrypted['push_keys.private_key_enc']).toBe(1);
    expect(readFileSync(keyFile, 'utf8').trim()).toBe(next);

    failedWith(await runCli(['admin', 'list-users'], withKey(current)), 2, refusal);
    const server = await startServer([], withKey(next));
    expect(await server.stop()).toBe(0);
    expect((await runJson(['admin', 'list-api-keys'], withKey(next))).data.length).toBeGreaterThan(0);
  });

  it('lets svc admin, demo, migrate and worker use the database svc serve runs, and refuses a second svc serve in one line', async () => {
    const server = await startServer([], env);
    try {
      expect(readFileSync(join(dataDir, 'svc.lock'), 'utf8')).toBe(`${server.pid}\n`);
      for (const args of [['admin', 'list-users'], ['migrate'], ['demo']]) expect((await runCli(args, env)).code).toBe(0);
      const worker = await startCommand(['worker'], { ...env, SVC_WORKERS: '1' }, /delivering with/);
      expect(await worker.stop()).toBe(0);
      const refusal = `${dataDir} is in use by svc (pid ${server.pid}), which runs its database: stop that process first, or set SVC_DATA_DIR to another folder`;
      failedWith(await runCli(['serve'], { ...env, PORT: String(await freePort()) }), 1, refusal);
    } finally {
      expect(await server.stop()).toBe(0);
    }
    // Once the server is gone, a command runs the database for its own time.
    expect((await runCli(['admin', 'list-users'], env)).code).toBe(0);
  });
});
