import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The built command-line tool: `npm test` compiles before running the suite. */
export const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
export const cliBuilt = () => existsSync(CLI);

/** A new data folder (SVC_DATA_DIR), which the user a root process runs PostgreSQL as can reach. */
export function tempDataDir(prefix = 'svc-data-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return dir;
}

/** The environment of a fresh shell: none of the service's own settings leak in from ours. */
export function cleanEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(SVC_|DATABASE_URL$|PORT$|HOST$|LOG_LEVEL$|REDIS_URL$)/.test(k)),
  );
  return { ...base, ...env };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `svc <args>` to completion, with `input` on its standard input if given. */
export function runCli(args: string[], env: Record<string, string>, input?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: cleanEnv(env), stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    if (input !== undefined) child.stdin!.end(input);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Runs a POSIX shell script in `cwd` in which `svc` is the built command, as a reader of the docs
 * types it (pipes and redirections included).
 */
export function runShell(script: string, env: Record<string, string>, cwd: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const svc = `svc() { "${process.execPath}" "${CLI}" "$@"; }\n`;
    const child = spawn('/bin/sh', ['-c', svc + script], { env: cleanEnv(env), cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs `svc <args> --json` and parses its output, failing on a non-zero exit. */
export async function runJson<T = any>(args: string[], env: Record<string, string>): Promise<T> {
  const result = await runCli([...args, '--json'], env);
  if (result.code !== 0) throw new Error(`svc ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

export interface Server {
  pid: number;
  /** Resolves to the exit code once the process has exited (however it was stopped). */
  exited: Promise<number | null>;
  /** Everything the process printed on stdout so far. */
  output(): string;
  /** Everything the process printed on stderr so far. */
  errors(): string;
  /** Sends SIGTERM and resolves to the exit code. */
  stop(): Promise<number | null>;
}

/** Starts `svc serve ...` and resolves once its output matches `ready` (by default: it is listening). */
export function startServer(args: string[], env: Record<string, string>, ready = /svc is listening on \S+\n/, timeoutMs = 90_000): Promise<Server> {
  return startCommand(['serve', ...args], env, ready, timeoutMs);
}

/** Starts `svc <args>` (a command that keeps running) and resolves once its stdout or stderr matches `ready`. */
export function startCommand(args: string[], env: Record<string, string>, ready: RegExp, timeoutMs = 90_000): Promise<Server> {
  const child: ChildProcess = spawn(process.execPath, [CLI, ...args], { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const server: Server = {
    pid: child.pid!,
    exited,
    output: () => stdout,
    errors: () => stderr,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`svc ${args[0]} did not start within ${timeoutMs} ms: ${stdout}\n${stderr}`));
    }, timeoutMs);
    const check = () => {
      if (ready.test(stdout) || ready.test(stderr)) {
        clearTimeout(timer);
        resolve(server);
      }
    };
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk;
      check();
    });
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk;
      check();
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`svc ${args[0]} exited with ${code} before it was ready: ${stdout}\n${stderr}`));
    });
  });
}

/** A TCP port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** A curl-like request: `fetch` with a bearer credential, answering status and parsed body. */
export async function request(url: string, token: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${token}`, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: res.status, body: (await res.json()) as any };
}
