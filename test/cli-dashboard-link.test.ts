import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, cliBuilt, freePort, runCli, runJson, startServer, tempDataDir, type Server } from './helpers/cli.js';

/**
 * `svc admin dashboard-link` prints a link to the service that will read it: the
 * svc serve running on the data folder, whatever PORT the command's own environment has.
 */
describe('svc admin dashboard-link', { timeout: 240_000 }, () => {
  let dataDir: string;
  let email: string;
  const running: Server[] = [];
  /** The environment of a second shell: the data folder, and neither PORT nor SVC_PUBLIC_URL. */
  const shell = () => ({ SVC_DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
  const serve = async (env: Record<string, string>) => {
    const server = await startServer(['--demo'], { ...shell(), SVC_WORKERS: '0', ...env });
    running.push(server);
    return { server, url: /svc is listening on (\S+)/.exec(server.output())![1] };
  };
  const link = async (env: Record<string, string> = {}) => (await runJson(['admin', 'dashboard-link', '--user', email], { ...shell(), ...env })).url as string;
  /** Exchanges the link's code at the link's own address, as the dashboard page does. */
  const signIn = async (url: string) => {
    const { origin, hash } = new URL(url);
    const res = await fetch(`${origin}/v1/dashboard/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: hash.replace('#code=', '') }) });
    return res.status;
  };

  beforeAll(() => {
    if (!cliBuilt()) throw new Error(`${CLI} is missing: build first (npx tsc -p . or npm test)`);
    dataDir = tempDataDir('svc-link-');
  });
  afterAll(async () => {
    for (const server of running) await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('points at the running svc serve on another port, and the link signs in there', async () => {
    // Any free port (PORT=0): only the server knows which it took.
    const { server, url } = await serve({ PORT: '0' });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(url).not.toBe('http://127.0.0.1:3000');
    email = JSON.parse(readFileSync(join(dataDir, 'demo.json'), 'utf8')).users[0].email;

    const made = await link();
    expect(made).toMatch(new RegExp(`^${url.replace(/\./g, '\\.')}/dashboard/#code=[\\w-]{43}$`));
    expect(await signIn(made)).toBe(201);
    // The server's address wins over the PORT of the command's environment.
    expect(await link({ PORT: String(await freePort()) })).toContain(`${url}/dashboard/#code=`);

    // Stopped: the record goes with it, and the command's own settings apply again.
    expect(await server.stop()).toBe(0);
    expect(existsSync(join(dataDir, 'serve.json'))).toBe(false);
    expect(await link()).toMatch(/^http:\/\/127\.0\.0\.1:3000\/dashboard\/#code=/);
    expect(await link({ PORT: '4555' })).toMatch(/^http:\/\/127\.0\.0\.1:4555\/dashboard\/#code=/);
    expect(await link({ SVC_PUBLIC_URL: 'https://svc.example.com/' })).toMatch(/^https:\/\/svc\.example\.com\/dashboard\/#code=/);
  });

  it("uses the running server's SVC_PUBLIC_URL, and ignores the record of a killed one", async () => {
    const { server } = await serve({ PORT: '0', SVC_PUBLIC_URL: 'https://svc.example.com' });
    expect(await link({ PORT: '4555' })).toMatch(/^https:\/\/svc\.example\.com\/dashboard\/#code=/);

    // Killed: its record and its lock stay behind, but name a process that is gone.
    process.kill(server.pid, 'SIGKILL');
    await server.exited;
    expect(existsSync(join(dataDir, 'serve.json'))).toBe(true);
    expect(await link({ PORT: '4555' })).toMatch(/^http:\/\/127\.0\.0\.1:4555\/dashboard\/#code=/);
  });

  it('says where the link points in its help', async () => {
    const help = await runCli(['admin', 'dashboard-link', '--help'], shell());
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('the public URL of the svc serve\n  running on SVC_DATA_DIR');
  });
});
