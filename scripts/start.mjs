#!/usr/bin/env node
// `npm start`: compiles when any source is newer than the build, then runs `svc serve --demo`
// (seeding an empty embedded database on first start and printing its credentials).
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

const built = existsSync('dist/cli.js') ? statSync('dist/cli.js').mtimeMs : 0;
if (built < Math.max(newest('src'), statSync('tsconfig.json').mtimeMs)) {
  console.log('Building...');
  const result = spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const child = spawn(process.execPath, [...NODE_FLAGS, 'dist/cli.js', 'serve', '--demo', ...process.argv.slice(2)], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
