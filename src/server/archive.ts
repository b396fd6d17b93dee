import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import type { Queryable } from '../db/db.js';
import { bound, PARTITIONED, type Partition } from '../db/partitions.js';

/**
 * An archive is one retired time range of the partitioned tables (retire.ts), as two files:
 * `NAME.jsonl.gz`, gzip-compressed JSON Lines, one line per row (`{"table": ..., "row": {...}}`,
 * the row as PostgreSQL's row_to_json writes it), and `NAME.manifest.json`, which says what the
 * data file holds (tables, range, rows) and its size and SHA-256. Each is written to a temporary
 * name, flushed to disk and renamed, data first: a manifest exists only for a data file complete
 * on disk, and an archive is read only through its manifest, checksum checked. The rows are the
 * tables' as stored: webhook signing secrets and endpoints' headers are not in these tables, and
 * attempts keep request headers redacted.
 */
export const FORMAT = 'svc-archive/1';
const BATCH = 5000;

export interface Manifest {
  format: string;
  range: string;
  /** ISO times of the range: null for the history's open start. */
  from: string | null;
  to: string;
  tables: { table: string; partition: string; rows: number }[];
  file: string;
  bytes: number;
  sha256: string;
  createdAt: string;
}

const KEYS: Record<string, string[]> = { webhook_deliveries: ['id'], webhook_delivery_attempts: ['delivery_id', 'attempt'], events: ['id'] };

/** Every row of the detached partitions, table by table, in key order, read in keyset batches. */
async function* lines(q: Queryable, parts: Partition[], counts: Map<string, number>): AsyncGenerator<string> {
  for (const part of parts) {
    const keys = KEYS[part.table];
    let after: unknown[] | null = null;
    counts.set(part.table, 0);
    for (;;) {
      const where: string = after === null ? '' : `WHERE (${keys.join(', ')}) > (${keys.map((_, i) => `$${i + 1}`).join(', ')})`;
      const rows: Record<string, unknown>[] = await q.query(
        `SELECT json_build_object('table', '${part.table}', 'row', row_to_json(t))::text AS line, ${keys.join(', ')}
           FROM ${part.name} t ${where} ORDER BY ${keys.join(', ')} LIMIT ${BATCH}`,
        after ?? [],
      );
      for (const row of rows) yield `${row.line as string}\n`;
      counts.set(part.table, counts.get(part.table)! + rows.length);
      if (rows.length < BATCH) break;
      after = keys.map((k) => rows[rows.length - 1][k]);
    }
  }
}

const stamp = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace(/[-:]/g, '') + 'Z';

/** The archive's name for a range: its start and end (UTC minutes), `start` for the history. */
export function archiveName(from: number | null, to: number): string {
  return `svc_${from === null ? 'start' : stamp(from)}_${stamp(to)}`;
}

async function syncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Writes `data` to `path` through a temporary name, flushed to disk before the rename. */
async function writeAtomically(path: string, write: (tmp: string) => Promise<void>): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    await write(tmp);
    await syncPath(tmp);
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
}

/** Writes the archive of a detached range (retire.ts), inside the transaction that then drops it. */
export async function writeArchive(
  q: Queryable,
  dir: string,
  range: { from: number | null; to: number; parts: Partition[] },
): Promise<Manifest> {
  await mkdir(dir, { recursive: true });
  const name = archiveName(range.from, range.to);
  const hash = createHash('sha256');
  let bytes = 0;
  const counts = new Map<string, number>();
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      bytes += chunk.length;
      done(null, chunk);
    },
  });
  await writeAtomically(join(dir, `${name}.jsonl.gz`), (tmp) => pipeline(lines(q, range.parts, counts), createGzip(), tap, createWriteStream(tmp)));
  const manifest: Manifest = {
    format: FORMAT,
    range: name,
    from: range.from === null ? null : new Date(range.from).toISOString(),
    to: new Date(range.to).toISOString(),
    tables: range.parts.map((p) => ({ table: p.table, partition: p.name, rows: counts.get(p.table) ?? 0 })),
    file: `${name}.jsonl.gz`,
    bytes,
    sha256: hash.digest('hex'),
    createdAt: new Date().toISOString(),
  };
  await writeAtomically(join(dir, `${name}.manifest.json`), async (tmp) => {
    const handle = await open(tmp, 'w');
    await handle.writeFile(JSON.stringify(manifest, null, 2) + '\n');
    await handle.close();
  });
  await syncPath(dir);
  return manifest;
}

export class ArchiveError extends Error {}

/** The manifest of an archive named by either of its files, its data checked against it (size and SHA-256). */
export async function openArchive(file: string): Promise<{ manifest: Manifest; data: string }> {
  const manifestPath = file.endsWith('.manifest.json') ? file : file.replace(/\.jsonl\.gz$/, '') + '.manifest.json';
  let manifest: Manifest;
  try {
    manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as Manifest;
  } catch {
    throw new ArchiveError(`${file}: no readable manifest (${basename(manifestPath)}): the archive is incomplete`);
  }
  if (manifest.format !== FORMAT) throw new ArchiveError(`${file}: not an archive of this format (${String(manifest.format)})`);
  const data = join(dirname(manifestPath), manifest.file);
  const size = await stat(data).then((s) => s.size, () => -1);
  if (size !== manifest.bytes) throw new ArchiveError(`${file}: ${manifest.file} is ${size < 0 ? 'missing' : `${size} bytes, not ${manifest.bytes}`}: the archive is incomplete`);
  const hash = createHash('sha256');
  await pipeline(createReadStream(data), hash);
  if (hash.digest('hex') !== manifest.sha256) throw new ArchiveError(`${file}: ${manifest.file} does not match its checksum: the archive is damaged`);
  return { manifest, data };
}

/** The archives of a folder: each manifest, or why the archive cannot be used. */
export async function listArchives(dir: string): Promise<{ file: string; manifest?: Manifest; problem?: string }[]> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => !n.startsWith('.')).sort();
  const out: { file: string; manifest?: Manifest; problem?: string }[] = [];
  for (const n of names) {
    if (n.endsWith('.manifest.json')) {
      try {
        out.push({ file: join(dir, n), manifest: (await openArchive(join(dir, n))).manifest });
      } catch (error) {
        out.push({ file: join(dir, n), problem: (error as Error).message });
      }
    } else if (n.endsWith('.jsonl.gz') && !names.includes(n.replace(/\.jsonl\.gz$/, '.manifest.json'))) {
      out.push({ file: join(dir, n), problem: 'no manifest: the archive is incomplete' });
    }
  }
  return out;
}

/**
 * Brings an archive back: each table's rows into a table of their own, attached again as the
 * partition of their range, and the range held from retention until `until`. One transaction: a
 * failure leaves nothing behind. Refused when the range is in use (its partitions exist).
 */
export async function restoreArchive(db: { tx<T>(fn: (q: Queryable) => Promise<T>, o?: { unbounded?: boolean }): Promise<T> }, file: string, until: Date) {
  const { manifest, data } = await openArchive(file);
  const from = manifest.from === null ? null : Date.parse(manifest.from);
  const to = Date.parse(manifest.to);
  return db.tx(
    async (q) => {
      const rows: Record<string, number> = {};
      for (const { table, partition } of manifest.tables) {
        await q.query(`CREATE TABLE ${partition} (LIKE ${table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`);
        rows[table] = 0;
      }
      let batch = new Map<string, unknown[]>();
      const flush = async () => {
        for (const [table, list] of batch) {
          const { partition } = manifest.tables.find((t) => t.table === table)!;
          await q.query(`INSERT INTO ${partition} SELECT * FROM json_populate_recordset(NULL::${partition}, $1::json)`, [JSON.stringify(list)]);
          rows[table] += list.length;
        }
        batch = new Map();
      };
      let pending = 0;
      for await (const line of createInterface({ input: createReadStream(data).pipe(createGunzip()), crlfDelay: Infinity })) {
        if (line === '') continue;
        const { table, row } = JSON.parse(line) as { table: string; row: unknown };
        if (!batch.has(table)) batch.set(table, []);
        batch.get(table)!.push(row);
        if (++pending % 1000 === 0) await flush();
      }
      await flush();
      for (const { table, partition, rows: expected } of manifest.tables) {
        if (rows[table] !== expected) throw new ArchiveError(`${file}: ${table} has ${rows[table]} rows, the manifest says ${expected}`);
        const { prefix } = PARTITIONED.find((p) => p.table === table)!;
        const lower = from === null ? 'MINVALUE' : `'${bound(prefix, from)}'`;
        await q.query(`ALTER TABLE ${table} ATTACH PARTITION ${partition} FOR VALUES FROM (${lower}) TO ('${bound(prefix, to)}')`);
      }
      const range = manifest.tables.find((t) => t.table === 'webhook_deliveries')?.partition ?? manifest.range;
      await q.query('INSERT INTO partition_holds (range, until) VALUES ($1, $2) ON CONFLICT (range) DO UPDATE SET until = EXCLUDED.until', [range, until]);
      return { manifest, rows, until };
    },
    { unbounded: true },
  );
}
