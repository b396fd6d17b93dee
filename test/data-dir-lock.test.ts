import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DataDirInUseError, LOCK_FILE, lockDataDir } from '../src/db/embedded/lock.js';

/** The pid of a process that has exited: nothing runs under it now. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0']);
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid!;
}

/** The lock file of an embedded data folder (src/db/embedded/lock.ts), in this process. */
describe('embedded data folder lock', () => {
  let dir: string;
  const lockFile = () => join(dir, LOCK_FILE);

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'svc-lock-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('holds the pid of its process until released, and leaves no other file behind', () => {
    const release = lockDataDir(dir);
    expect(readFileSync(lockFile(), 'utf8')).toBe(`${process.pid}\n`);
    expect(readdirSync(dir)).toEqual([LOCK_FILE]);
    release();
    expect(existsSync(lockFile())).toBe(false);
    release();
  });

  it('refuses while another live process holds it, naming the folder and the pid', () => {
    // The parent of this test process is alive for as long as the test runs.
    writeFileSync(lockFile(), `${process.ppid}\n`);
    const attempt = () => lockDataDir(dir);
    expect(attempt).toThrow(DataDirInUseError);
    expect(attempt).toThrow(
      `${dir} is in use by svc (pid ${process.ppid}), which runs its database: stop that process first, or set SVC_DATA_DIR to another folder`,
    );
    expect(readFileSync(lockFile(), 'utf8')).toBe(`${process.ppid}\n`);
    expect(readdirSync(dir)).toEqual([LOCK_FILE]);
  });

  it('takes over a lock whose process is gone, or that holds no pid', async () => {
    for (const stale of [`${await deadPid()}\n`, '', 'garbage']) {
      writeFileSync(lockFile(), stale);
      const release = lockDataDir(dir);
      expect(readFileSync(lockFile(), 'utf8')).toBe(`${process.pid}\n`);
      release();
    }
    expect(readdirSync(dir)).toEqual([]);
  });
});
