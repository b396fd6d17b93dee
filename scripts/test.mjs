#!/usr/bin/env node
// Runs the suite on both engines. PostgreSQL must be reachable at TEST_DATABASE_URL (default
// postgres://postgres@127.0.0.1:5432/test); under CI its absence is a failure, elsewhere the
// PostgreSQL half is left out with a loud warning. Extra arguments go to vitest.
import { spawnSync } from 'node:child_process';
import pg from 'pg';

const url = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
let postgres = true;
const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
try {
  await client.connect();
  await client.end();
} catch (error) {
  postgres = false;
  if (process.env.CI) {
    console.error(`PostgreSQL is not reachable at ${url}: ${error.message}`);
    process.exit(1);
  }
  console.warn(`\n*** PostgreSQL is not reachable at ${url}: running the PGlite half of the suite only ***\n`);
}

// The build is part of the check: a type error fails the suite (the SDK and its examples included),
// CLI tests run the built `svc`, and SDK tests run the built SDK's examples.
const build = spawnSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

const projects = postgres ? ['--project', 'pglite', '--project', 'postgres'] : ['--project', 'pglite'];
const result = spawnSync('npx', ['vitest', 'run', ...projects, ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: { ...process.env, TEST_DATABASE_URL: url },
});
process.exit(result.status ?? 1);
