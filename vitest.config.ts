import { defineConfig } from 'vitest/config';

/**
 * The suite runs once per database engine: `pglite` (embedded, in memory) and `postgres` (the server
 * at TEST_DATABASE_URL, one schema per test file). `npm test` runs both; see scripts/test.mjs.
 */
const shared = {
  include: ['test/**/*.test.ts'],
  testTimeout: 30_000,
  hookTimeout: 60_000,
};

export default defineConfig({
  test: {
    // Two files at a time: much of the work waits on the database server, so this beats one per core.
    maxWorkers: 2,
    minWorkers: 1,
    projects: [
      { test: { ...shared, name: 'pglite', env: { TEST_ENGINE: 'pglite' } } },
      { test: { ...shared, name: 'postgres', env: { TEST_ENGINE: 'postgres' } } },
    ],
  },
});
