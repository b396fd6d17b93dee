#!/usr/bin/env node
// `npm test`: builds (a type error fails the suite, CLI tests run the built `svc`, SDK tests the
// built SDK's examples), then runs the suite once, on PostgreSQL: TEST_DATABASE_URL when it is set,
// otherwise an embedded server the run starts itself (test/helpers/server.ts). Extra arguments go
// to vitest.
import { spawnSync } from 'node:child_process';

const build = spawnSync('npm', ['run', '--silent', 'build'], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

const result = spawnSync('npx', ['vitest', 'run', ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(result.status ?? 1);
