import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_COMMANDS } from '../src/cli/admin.js';
import { CLI, cliBuilt, freePort, request, runCli, runJson, startServer, tempDataDir } from './helpers/cli.js';

/**
 * The built `svc` tool, run as a user would, on the embedded default (a data
 * folder whose PostgreSQL server each command starts, or uses while svc serve runs).
 */
describe('svc command line', { timeout: 240_000 }, () => {
  let dataDir: string;
  /** The environment every command runs with. */
  let env: Record<string, string>;
  let port: number;

  beforeAll(async () => {
    if (!cliBuilt()) throw new Error(`${CLI} is missing: build first (npx tsc -p . or npm test)`);
    dataDir = tempDataDir('svc-cli-');
    port = await freePort();
    env = { SVC_DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn', SVC_WORKERS: '0' };
  }, 120_000);

  /** Exchanges a dashboard sign-in link's code, as the dashboard page does. */
  async function signIn(at: (path: string) => string, link: string) {
    const code = new URL(link).hash.replace('#code=', '');
    const res = await fetch(at('/v1/dashboard/sessions'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code }) });
    return { status: res.status, body: (await res.json()) as any };
  }

  afterAll(async () => {
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers --help on every command with exit 0, and refuses unknown commands and flags', async () => {
    const commands = [[], ['serve'], ['worker'], ['migrate'], ['demo'], ['listen'], ['admin'], ...Object.keys(ADMIN_COMMANDS).map((c) => ['admin', c])];
    for (const command of commands) {
      const result = await runCli([...command, '--help'], env);
      expect(result.code, `svc ${command.join(' ')} --help: ${result.stderr}`).toBe(0);
      expect(result.stdout).toContain(`svc ${command.join(' ')}`.trim());
    }
    for (const args of [['nope'], ['admin', 'nope'], ['admin', 'create-user', '--bogus', 'x'], ['demo', 'extra']]) {
      const result = await runCli(args, env);
      expect(result.code, args.join(' ')).not.toBe(0);
      expect(result.stderr).toMatch(/^svc: /);
    }
  });

  it('runs, as the svc bin, through its first line with the Node.js flags of scripts/node-flags.mjs', async () => {
    const { NODE_FLAGS } = await import('../scripts/node-flags.mjs');
    const shebang = readFileSync(CLI, 'utf8').split('\n')[0];
    expect(shebang).toBe(`#!/usr/bin/env -S node ${NODE_FLAGS.join(' ')}`);
    // What the kernel runs for `svc --help`: the interpreter, the rest of the line as one argument, the file.
    const space = shebang.indexOf(' ');
    const result = spawnSync(shebang.slice(2, space), [shebang.slice(space + 1), CLI, '--help'], { encoding: 'utf8' });
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain('Usage:');
  });

  it('stops at start on a bad setting, naming it', async () => {
    for (const [name, value] of [
      ['PORT', 'abc'],
      ['PORT', '70000'],
      ['LOG_LEVEL', 'loud'],
      ['SVC_PUBLIC_URL', 'not a url'],
      ['SVC_MASTER_KEY', 'short'],
      ['DATABASE_URL', 'mysql://localhost/db'],
    ]) {
      for (const command of [['serve'], ['demo', '--json']]) {
        const result = await runCli(command, { ...env, [name]: value });
        expect(result.code, `${name}=${value} svc ${command[0]}`).not.toBe(0);
        expect(result.code).not.toBeNull();
        expect(result.stderr).toContain(name);
        expect(result.stdout).toBe('');
      }
    }
  });

  it('migrates into the configured database', async () => {
    const { applied } = await runJson(['migrate'], env);
    expect(applied.length).toBeGreaterThan(0);
    expect((await runJson(['migrate'], env)).applied).toEqual([]);
  });

  it('svc demo --json prints the demo set, and its credentials work against svc serve', async () => {
    const demo = await runJson(['demo'], env);
    expect(demo).toMatchObject({
      baseUrl: `http://127.0.0.1:${port}`,
      organization: { id: expect.stringMatching(/^org_/), slug: expect.any(String) },
    });
    expect(demo.workspaces).toHaveLength(2);
    for (const w of demo.workspaces) {
      expect(w).toMatchObject({ id: expect.stringMatching(/^wsp_/), slug: expect.any(String), apiKey: expect.stringMatching(/^svc_sk_(?!test_)/), testApiKey: expect.stringMatching(/^svc_sk_test_/) });
    }
    expect(demo.users.map((u: { role: string }) => u.role)).toEqual(['owner', 'admin', 'viewer', 'outsider']);
    for (const u of demo.users) {
      expect(u).toMatchObject({ id: expect.any(String), email: expect.stringContaining('@'), token: expect.stringMatching(/^svc_pat_/) });
    }

    const [ownerUser] = demo.users;
    const link = await runJson(['admin', 'dashboard-link', '--user', ownerUser.email], env);
    expect(link).toMatchObject({ userId: ownerUser.id, email: ownerUser.email, url: expect.stringMatching(new RegExp(`^http://127\\.0\\.0\\.1:${port}/dashboard/#code=[\\w-]{43}$`)) });
    expect(Date.parse(link.expiresAt) - Date.now()).toBeGreaterThan(9 * 60_000);
    const noUser = await runCli(['admin', 'dashboard-link', '--user', 'nobody@example.com'], env);
    expect([noUser.code, noUser.stderr.trim()]).toEqual([1, 'svc: there is no user "nobody@example.com" (list them with svc admin list-users)']);
    // No demo.json (svc demo, not npm start) and two owners (the demo's and the outsider's): --user is needed.
    const noDefault = await runCli(['admin', 'dashboard-link'], env);
    expect([noDefault.code, noDefault.stderr.trim()]).toEqual([
      1,
      'svc: there is no demo owner and not exactly one organization owner: name the user with --user USER_ID|EMAIL (list them with svc admin list-users)',
    ]);

    const server = await startServer([], env);
    try {
      const session = await signIn((path) => `${demo.baseUrl}${path}`, link.url);
      expect(session.status).toBe(201);
      expect((await request(`${demo.baseUrl}/v1/me`, session.body.token)).body.user.id).toBe(ownerUser.id);
      expect((await signIn((path) => `${demo.baseUrl}${path}`, link.url)).status).toBe(401);
      const [ws1, ws2] = demo.workspaces;
      const [owner, admin, viewer, outsider] = demo.users.map((u: { token: string }) => u.token);
      const at = (path: string) => `${demo.baseUrl}${path}`;
      expect((await request(at('/v1/products'), ws1.apiKey)).status).toBe(200);
      expect((await request(at('/v1/products'), ws2.testApiKey)).status).toBe(200);
      expect((await request(at('/v1/products'), ws1.apiKey, { method: 'POST', body: { name: 'From the CLI test' } })).status).toBe(201);
      for (const ws of [ws1, ws2]) expect((await request(at(`/v1/workspaces/${ws.id}/products`), owner)).status).toBe(200);
      // The three sample products of the demo set, and the one just created.
      expect((await request(at(`/v1/workspaces/${ws1.id}/products`), admin)).body.data).toHaveLength(4);
      expect((await request(at(`/v1/workspaces/${ws2.id}/products`), admin)).status).toBe(403);
      expect((await request(at(`/v1/workspaces/${ws1.id}/products`), viewer, { method: 'POST', body: { name: 'x' } })).status).toBe(403);
      expect((await request(at(`/v1/workspaces/${ws1.id}/products`), outsider)).status).toBe(403);
      const orgs = await request(at('/v1/organizations'), owner);
      expect(orgs.body.data.map((o: { id: string }) => o.id)).toEqual([demo.organization.id]);
      expect((await request(at('/v1/me'), ws1.apiKey)).body.credential.workspaceId).toBe(ws1.id);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('creates users, organizations, workspaces, members, keys and tokens with --json, and revokes them', async () => {
    const tag = Math.random().toString(36).slice(2, 8);
    const user = await runJson(['admin', 'create-user', '--email', `cli-${tag}@example.com`, '--name', 'CLI user'], env);
    const other = await runJson(['admin', 'create-user', '--email', `cli2-${tag}@example.com`, '--name', 'CLI viewer'], env);
    const org = await runJson(['admin', 'create-org', '--slug', `cli-${tag}`, '--name', 'CLI org'], env);
    const ws = await runJson(['admin', 'create-workspace', '--org', org.id, '--slug', 'main', '--name', 'Main'], env);
    expect([user.id, org.id, ws.id]).toEqual([expect.stringMatching(/^usr_/), expect.stringMatching(/^org_/), expect.stringMatching(/^wsp_/)]);
    expect(await runJson(['admin', 'add-member', '--user', user.id, '--org', org.id, '--role', 'admin'], env)).toMatchObject({ userId: user.id, organizationId: org.id, role: 'admin' });
    expect(await runJson(['admin', 'add-member', '--user', other.id, '--workspace', ws.id, '--role', 'viewer'], env)).toMatchObject({ workspaceId: ws.id, role: 'viewer' });
    const bad = await runCli(['admin', 'add-member', '--user', user.id, '--workspace', ws.id, '--role', 'member'], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--role');

    const key = await runJson(['admin', 'create-api-key', '--workspace', ws.id, '--name', 'live'], env);
    const testKey = await runJson(['admin', 'create-api-key', '--workspace', ws.id, '--name', 'test', '--test', '--rate-limit', '50'], env);
    const token = await runJson(['admin', 'create-token', '--user', user.id, '--name', 'cli', '--expires-in', '30d'], env);
    const viewerToken = await runJson(['admin', 'create-token', '--user', other.id, '--name', 'cli', '--test'], env);
    const doomedKey = await runJson(['admin', 'create-api-key', '--workspace', ws.id, '--name', 'doomed'], env);
    const doomedToken = await runJson(['admin', 'create-token', '--user', user.id, '--name', 'doomed'], env);
    expect(key.key).toMatch(/^svc_sk_(?!test_)/);
    expect(testKey).toMatchObject({ workspaceId: ws.id, test: true, key: expect.stringMatching(/^svc_sk_test_/) });
    expect(token.token).toMatch(/^svc_pat_(?!test_)/);
    expect(Date.parse(token.expiresAt) - Date.now()).toBeGreaterThan(29 * 86_400_000);
    expect(viewerToken.token).toMatch(/^svc_pat_test_/);
    expect((await runJson(['admin', 'revoke-api-key', '--id', doomedKey.id], env)).id).toBe(doomedKey.id);
    expect(await runJson(['admin', 'revoke-token', '--id', doomedToken.id], env)).toEqual({ id: doomedToken.id, revoked: true });

    const server = await startServer([], env);
    try {
      const at = (path: string) => `http://127.0.0.1:${port}${path}`;
      expect((await request(at('/v1/products'), key.key, { method: 'POST', body: { name: 'cli' } })).status).toBe(201);
      expect((await request(at('/v1/products'), testKey.key)).body.data).toHaveLength(1);
      const workspaces = (await request(at('/v1/workspaces'), token.token)).body.data;
      expect(workspaces.map((w: { id: string; role: string; implicit: boolean }) => [w.id, w.role, w.implicit])).toEqual([[ws.id, 'admin', true]]);
      expect((await request(at(`/v1/workspaces/${ws.id}/api-keys`), token.token)).status).toBe(200);
      expect((await request(at(`/v1/workspaces/${ws.id}/products`), viewerToken.token)).status).toBe(200);
      expect((await request(at(`/v1/workspaces/${ws.id}/products`), viewerToken.token, { method: 'POST', body: { name: 'x' } })).status).toBe(403);
      expect((await request(at('/v1/products'), doomedKey.key)).status).toBe(401);
      expect((await request(at('/v1/me'), doomedToken.token)).status).toBe(401);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it('svc serve --demo seeds an empty data folder once and prints the same credentials at every start', async () => {
    const fresh = tempDataDir('svc-cli-demo-');
    const demoEnv = { ...env, SVC_DATA_DIR: fresh, PORT: String(await freePort()) };
    try {
      const credentials = async () => {
        const server = await startServer(['--demo'], demoEnv, /Try: curl .*\n/);
        try {
          const out = server.output();
          const baseUrl = /svc is listening on (\S+)/.exec(out)![1];
          const apiKey = /API key: +(svc_sk_\S+)/.exec(out)![1];
          const owner = /owner token: +(svc_pat_\S+)/.exec(out)![1];
          expect(baseUrl).toBe(`http://127.0.0.1:${demoEnv.PORT}`);
          const listed = await request(`${baseUrl}/v1/products`, apiKey);
          expect(listed.status).toBe(200);
          // The demo set's sample products, so the printed curl shows something.
          expect(listed.body).toMatchObject({ nextPageUrl: null, previousPageUrl: null });
          expect(listed.body.data).toHaveLength(3);
          expect((await request(`${baseUrl}/v1/me`, owner)).body.user).not.toBeNull();
          // Each start prints a new one-time dashboard link for the demo owner.
          const link = /Dashboard sign-in for \S+ \(one use, 10 minutes\): (\S+)/.exec(out)![1];
          const session = await signIn((path) => `${baseUrl}${path}`, link);
          expect(session.status).toBe(201);
          expect((await request(`${baseUrl}/v1/me`, session.body.token)).body.user.email).toMatch(/^owner-/);
          expect((await signIn((path) => `${baseUrl}${path}`, link)).status).toBe(401);
          return { baseUrl, apiKey, owner };
        } finally {
          expect(await server.stop()).toBe(0);
        }
      };
      const first = await credentials();
      expect(await credentials()).toEqual(first);
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });
});
