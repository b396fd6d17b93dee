import type { TestApp } from './app.js';

/** A workspace's events in the log's order: by their batch's position, then their place in it (migrations/019). */
export async function logOf(t: TestApp, workspaceId: string): Promise<string[]> {
  const rows = await t.ctx.db.query<{ id: string }>(
    `SELECT x.id FROM event_batches b CROSS JOIN LATERAL unnest(b.event_ids) WITH ORDINALITY AS x (id, n)
      WHERE b.workspace_id = $1 AND b.position IS NOT NULL ORDER BY b.position, x.n`,
    [workspaceId],
  );
  return rows.map((r) => r.id);
}

/** Starts `app` listening on a free port of 127.0.0.1; returns its base URL. */
export async function listening(app: TestApp['app']): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}
