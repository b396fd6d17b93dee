import { describe, expect, it } from 'vitest';
import { CLI, cliBuilt, runCli } from './helpers/cli.js';

/**
 * Issue 35 item 10: the command line's answers to a missing command and to a setting passed as an
 * option.
 */
describe('npm start and the command line', { timeout: 300_000 }, () => {
  it('prints its usage and exits 2 without a command, and names PORT for svc serve --port', async () => {
    if (!cliBuilt()) throw new Error(`${CLI} is missing: build first (npm run build, or npm test)`);
    const bare = await runCli([], {});
    expect([bare.code, bare.stdout]).toEqual([2, '']);
    expect(bare.stderr).toContain('Usage:');
    expect((await runCli(['--help'], {})).code).toBe(0);

    for (const args of [['serve', '--port', '4000'], ['serve', '--demo', '--port=4000']]) {
      const result = await runCli(args, {});
      expect([result.code, result.stdout]).toEqual([2, '']);
      expect(result.stderr.trim()).toBe(
        "svc: --port is not an option of svc serve: the service takes its settings from the environment, so set PORT instead: PORT=4000 svc serve (README.md's configuration table lists them all)",
      );
    }
    // A value that may hold a password is not repeated.
    const url = await runCli(['worker', '--database-url', 'postgres://user:secret@db/svc'], {});
    expect(url.code).toBe(2);
    expect(url.stderr).toContain('set DATABASE_URL instead: DATABASE_URL=VALUE svc worker');
    expect(url.stderr).not.toContain('secret');
    // Other unknown options keep the parser's message; svc listen has no PORT setting to name.
    expect((await runCli(['serve', '--bogus'], {})).stderr.trim()).toBe("svc: Unknown option '--bogus'");
    expect((await runCli(['listen', '--port', '4000'], {})).stderr).not.toContain('PORT');
  });
});
