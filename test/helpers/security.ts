import net from 'node:net';
import { expect } from 'vitest';
import type { Queryable } from '../../src/db/db.js';

/**
 * Every row of every table of the test database, as sorted JSON text: equal snapshots, equal data.
 * Batches of events committed earlier get their positions first (the sequencer runs after each
 * commit, src/engine/log/sequencer.ts), so a position given late is not taken for a change.
 */
export async function snapshot({ db, sequencer }: { db: Queryable; sequencer: { settled(): Promise<void> } }): Promise<Record<string, string[]>> {
  await sequencer.settled();
  const tables = await db.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`,
  );
  const out: Record<string, string[]> = {};
  for (const { name } of tables) {
    const rows = await db.query<{ r: string }>(`SELECT row_to_json(t)::text AS r FROM "${name}" t ORDER BY 1`);
    out[name] = rows.map((row) => row.r);
  }
  return out;
}

export interface Envelope {
  code: string;
  message: string;
  requestId: string;
  details?: { path: string; message: string }[];
}

/** The documented error envelope (docs/api.md#errors): `{error: {code, message, requestId}}`, id = Request-Id. */
export function expectEnvelope(status: number, headers: Record<string, unknown>, body: string, label = ''): Envelope {
  const where = `${label} -> ${status} ${body.slice(0, 300)}`;
  expect(status, where).toBeGreaterThanOrEqual(400);
  expect(status, where).toBeLessThan(500);
  expect(String(headers['content-type']), where).toMatch(/^application\/json/);
  const parsed = JSON.parse(body) as { error: Envelope };
  expect(Object.keys(parsed), where).toEqual(['error']);
  const { error } = parsed;
  expect(typeof error.code, where).toBe('string');
  expect(typeof error.message, where).toBe('string');
  expect(error.message.length, where).toBeGreaterThan(0);
  expect(error.requestId, where).toMatch(/^req_/);
  expect(error.requestId, where).toBe(headers['request-id']);
  return error;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The response head exactly as received, to look for injected header lines. */
  head: string;
}

/** Sends bytes as they are over a socket (no client-side checks) and reads one response. */
export function rawRequest(port: number, request: string | Buffer): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = () => {
      if (settled) return;
      const data = Buffer.concat(chunks).toString('latin1');
      const split = data.indexOf('\r\n\r\n');
      if (split < 0) return;
      const head = data.slice(0, split);
      const [statusLine, ...lines] = head.split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const length = Number(headers['content-length'] ?? NaN);
      const body = Buffer.from(data.slice(split + 4), 'latin1');
      if (Number.isFinite(length) && body.length < length) return;
      settled = true;
      socket.destroy();
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: body.toString('utf8'), head });
    };
    socket.on('data', (chunk) => {
      chunks.push(chunk);
      finish();
    });
    socket.on('end', finish);
    socket.on('close', () => {
      finish();
      if (!settled) reject(new Error(`connection closed without a complete response: ${Buffer.concat(chunks).toString('latin1')}`));
    });
    socket.on('error', (error) => {
      if (!settled && chunks.length === 0) reject(error);
    });
    socket.write(request);
  });
}
