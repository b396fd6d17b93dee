#!/usr/bin/env node
// `npm start`: compiles when any source is newer than the build (the service, then the SDK and the
// dashboard, which is built on the SDK), then runs `svc serve --demo` (seeding an empty embedded
// database on first start and printing its credentials and a dashboard sign-in link).
// package.json runs it with `exec`: npm passes SIGINT and SIGTERM to the shell it runs a script in,
// and Debian's sh (dash) keeps SIGINT to itself until its command ends; exec puts this process in
// the shell's place, so that a signal to npm reaches it, and it passes it on to the server.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { NODE_FLAGS } from './node-flags.mjs';

function newest(dir) {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

const builtAt = (file) => (existsSync(file) ? statSync(file).mtimeMs : 0);

function build(what, command, args) {
  console.log(`Building ${what}...`);
  // Quiet: the bundle sizes are for who works on the dashboard, not for a first start.
  const result = spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, SVC_BUILD_QUIET: '1' } });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

if (builtAt('dist/cli/main.js') < Math.max(newest('src'), statSync('tsconfig.json').mtimeMs)) build('the service', 'npm', ['run', '--silent', 'build:service']);
if (builtAt('sdk/dist/index.js') < newest('sdk/src')) build('the SDK', 'npm', ['run', '--silent', 'build', '--workspace', 'sdk']);
const dashboardSources = Math.max(newest('dashboard/src'), statSync('dashboard/index.html').mtimeMs, builtAt('sdk/dist/index.js'));
if (builtAt('dashboard/dist/index.html') < dashboardSources) build('the dashboard', 'npm', ['run', '--silent', 'build', '--workspace', 'dashboard']);

const child = spawn(process.execPath, [...NODE_FLAGS, 'dist/cli/main.js', 'serve', '--demo', ...process.argv.slice(2)], { stdio: 'inherit' });
const stop = (signal) => {
  if (child.exitCode === null && child.signalCode === null) child.kill(signal);
};
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => stop(signal));
// Left without its parent (npm killed, or a shell that a signal ended without passing it on): this
// process stops the server as if it had been signalled itself.
const parent = process.ppid;
const orphaned = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(orphaned);
  stop('SIGTERM');
}, 250);
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
