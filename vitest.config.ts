import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The PostgreSQL server of the run (TEST_DATABASE_URL, or one started for it), and which of
    // Redis, RabbitMQ, NATS and Chromium answer (the tests of a missing one are skipped, and named).
    globalSetup: ['test/helpers/server.ts', 'test/helpers/services-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two files at a time: much of the work waits on the database server, so this beats one per core.
    maxWorkers: 2,
    minWorkers: 1,
  },
});
