#!/usr/bin/env node
// `npm run bench [-- --quick]`: builds, then runs bench/run.mjs against PostgreSQL
// (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test) and embedded PGlite.
import { spawnSync } from 'node:child_process';

const build = spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
const run = spawnSync(process.execPath, ['bench/run.mjs', ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(run.status ?? 1);
