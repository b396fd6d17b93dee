#!/usr/bin/env node
// `npm run sdk:generate`: builds the service, builds its OpenAPI document in this process (no server,
// no network) and writes the SDK's types (sdk/src/schema.ts) with openapi-typescript.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SDK_TYPES_FILE, sdkTypes } from './sdk-types.mjs';

const build = spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

const { buildOpenApiDocument } = await import('../dist/server/openapi/generate.js');
const types = await sdkTypes(await buildOpenApiDocument());
writeFileSync(SDK_TYPES_FILE, types);
console.log(`wrote ${fileURLToPath(SDK_TYPES_FILE)} (${types.split('\n').length} lines)`);
