#!/usr/bin/env node
// `npm start`: builds (`npm run build`: the service and the SDK its examples use) when any source is
// newer than the build, then runs `svc serve --demo` (seeding an empty embedded database on first
// start and printing its credentials).
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
const built = Math.min(builtAt('dist/cli.js'), builtAt('sdk/dist/index.js'));
if (built < Math.max(newest('src'), newest('sdk/src'), statSync('tsconfig.json').mtimeMs)) {
  console.log('Building...');
  const result = spawnSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const child = spawn(process.execPath, [...NODE_FLAGS, 'dist/cli.js', 'serve', '--demo', ...process.argv.slice(2)], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
