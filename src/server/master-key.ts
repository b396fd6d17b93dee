import { ConfigError } from '../lib/config.js';
import type { Db, Queryable } from '../db/db.js';
import { SecretBox, safeEqual } from '../lib/secretbox.js';

/**
 * Every column that holds a value sealed under the master key (SecretBox), by table: what
 * `svc admin rotate-master-key` re-encrypts. A new encrypted column is one more entry here; its
 * table needs a text `id` primary key, and NULL means "no value".
 */
export const ENCRYPTED_COLUMNS: { table: string; columns: string[] }[] = [
  { table: 'webhook_endpoints', columns: ['secret_enc', 'previous_secret_enc', 'headers_enc', 'url_enc'] },
  { table: 'idempotency_keys', columns: ['response_enc'] },
  { table: 'push_keys', columns: ['private_key_enc'] },
  { table: 'push_devices', columns: ['subscription_enc'] },
];

/** The master key's check value: an HMAC under the key of a fixed purpose, like every derived key. */
export function checkValue(box: SecretBox): string {
  return box.deriveKey('master-key-check').toString('hex');
}

function opens(box: SecretBox, sealed: string): boolean {
  try {
    box.decrypt(sealed);
    return true;
  } catch {
    return false;
  }
}

/** One sealed value of the database, if any: to judge a key against secrets stored before the check value. */
async function someSealedValue(q: Queryable): Promise<string | null> {
  for (const { table, columns } of ENCRYPTED_COLUMNS) {
    for (const column of columns) {
      const [row] = await q.query<{ sealed: string }>(`SELECT ${column} AS sealed FROM ${table} WHERE ${column} IS NOT NULL LIMIT 1`);
      if (row) return row.sealed;
    }
  }
  return null;
}

/**
 * Whether `box` holds the key the database's secrets are sealed under. The first start stores the
 * check value; a database whose secrets were sealed before there was one (an older version) is
 * judged by opening one of them, so a wrong key is never recorded as the right one.
 */
export async function keyMatches(q: Queryable, box: SecretBox, now: Date): Promise<boolean> {
  const expected = checkValue(box);
  const [row] = await q.query<{ check_value: string }>('SELECT check_value FROM master_key_check');
  if (row) return safeEqual(row.check_value, expected);
  const sealed = await someSealedValue(q);
  if (sealed !== null && !opens(box, sealed)) return false;
  // Two processes starting together: the first insert wins, and the other compares against it.
  await q.query('INSERT INTO master_key_check (check_value, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING', [expected, now]);
  const [stored] = await q.query<{ check_value: string }>('SELECT check_value FROM master_key_check');
  return safeEqual(stored.check_value, expected);
}

/** Stops the start of a process whose master key is not the database's (`source` names where it came from). */
export async function verifyMasterKey(db: Db, box: SecretBox, source: string, now: Date): Promise<void> {
  if (await keyMatches(db, box, now)) return;
  throw new ConfigError(
    `${source} is not the master key this database's secrets are encrypted with: start with the key it was set up with ` +
      '(to change keys, run svc admin rotate-master-key --new KEY with the current one)',
  );
}

export interface Rotation {
  /** Values re-encrypted, by `table.column`. */
  reencrypted: Record<string, number>;
}

/** Rows re-encrypted per UPDATE statement. */
const UPDATE_BATCH = 500;

/**
 * Re-encrypts every sealed value (ENCRYPTED_COLUMNS) from `current` to `next` and stores the new
 * check value, in one transaction: a failure changes nothing, and no process ever sees secrets
 * under two keys. A value the current key cannot open stops the rotation, naming its row.
 */
export async function rotateMasterKey(db: Db, current: SecretBox, next: SecretBox, now: Date): Promise<Rotation> {
  return db.tx(async (q) => {
    // Taken first, so two rotations at once run one after the other and the second finds its key stale.
    await q.query('SELECT check_value FROM master_key_check FOR UPDATE');
    if (!(await keyMatches(q, current, now))) {
      throw new ConfigError('the current master key is not the one this database is encrypted with; nothing was changed');
    }
    const reencrypted: Record<string, number> = {};
    for (const { table, columns } of ENCRYPTED_COLUMNS) {
      const rows = await q.query<Record<string, string | null>>(`SELECT id, ${columns.join(', ')} FROM ${table} ORDER BY id FOR UPDATE`);
      for (const column of columns) reencrypted[`${table}.${column}`] = 0;
      const sealed = rows.map((row) => ({
        id: row.id!,
        values: columns.map((column) => {
          const value = row[column];
          if (value === null) return null;
          let plain: string;
          try {
            plain = current.decrypt(value);
          } catch {
            throw new ConfigError(`${table}.${column} of ${row.id} cannot be decrypted with the current master key; nothing was changed`);
          }
          reencrypted[`${table}.${column}`]++;
          return next.encrypt(plain);
        }),
      }));
      for (let i = 0; i < sealed.length; i += UPDATE_BATCH) {
        const batch = sealed.slice(i, i + UPDATE_BATCH);
        const sets = columns.map((column, c) => `${column} = v.c${c}`).join(', ');
        const arrays = columns.map((_, c) => `$${c + 2}::text[]`).join(', ');
        const names = columns.map((_, c) => `c${c}`).join(', ');
        await q.query(`UPDATE ${table} t SET ${sets} FROM unnest($1::text[], ${arrays}) AS v (id, ${names}) WHERE t.id = v.id`, [
          batch.map((r) => r.id),
          ...columns.map((_, c) => batch.map((r) => r.values[c])),
        ]);
      }
    }
    await q.query('UPDATE master_key_check SET check_value = $1, rotated_at = $2', [checkValue(next), now]);
    return { reencrypted };
  });
}
