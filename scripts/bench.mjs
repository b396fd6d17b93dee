#!/usr/bin/env node
// `npm run bench [-- --quick]`: builds, then runs bench/run.mjs: every scenario on the system's
// PostgreSQL (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test), and the main
// ones again on the embedded server the service starts by itself when no DATABASE_URL is set.
import { spawnSync } from 'node:child_process';

const build = spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
const run = spawnSync(process.execPath, ['bench/run.mjs', ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(run.status ?? 1);
