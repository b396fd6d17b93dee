import type { Db } from './db.js';

/**
 * LISTEN/NOTIFY channels belong to the database, not to a schema: installations in different
 * schemas of one database (several on one server, each test file and bench run in its own) would
 * hear each other's notifications. Every channel is therefore named after the schema the session
 * works in, current_schema() (the first schema of the search path that exists: where the tables
 * are), computed by the server in the very statement that notifies and once by each listener:
 *
 * - `public`: the plain name (`webhook_deliveries`), as before channels
 *   were per schema, so that older processes of an installation in `public` and newer ones still
 *   hear each other during an upgrade;
 * - a schema of lower-case letters, digits and `_` whose name fits: `<name>:<schema>`
 *   (`webhook_deliveries:t_1a2b3c`);
 * - any other (a channel name is an identifier of at most 63 bytes; a quoted schema may hold any
 *   character): `<name>#` and the first 16 hex digits of the md5 of the schema's name.
 */
const MAX_IDENTIFIER_BYTES = 63;

/** The SQL expression of channel `name` in the session's schema, for pg_notify(<this>, payload). */
export function channelSql(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain channel name: ${name}`);
  const fits = MAX_IDENTIFIER_BYTES - name.length - 1;
  return (
    `(CASE WHEN current_schema() IS NULL OR current_schema() = 'public' THEN '${name}'` +
    ` WHEN current_schema() ~ '^[a-z_][a-z0-9_]*$' AND octet_length(current_schema()) <= ${fits} THEN '${name}:' || current_schema()` +
    ` ELSE '${name}#' || left(md5(current_schema()), 16) END)`
  );
}

/** The name of channel `name` in the schema of `db`'s sessions. */
export async function channelName(db: Db, name: string): Promise<string> {
  const [row] = await db.query<{ channel: string }>(`SELECT ${channelSql(name)} AS channel`);
  return row.channel;
}

const MAX_BACKOFF_MS = 5_000;

/**
 * Calls `onNotify` for every NOTIFY on channel `name` of `db`'s schema; resolves to an unsubscribe
 * function. The channel's name is asked of the database first: if it cannot be reached now, this
 * keeps asking in the background, as the LISTEN connection does (listener.ts), and calls
 * `onNotify('')` once it listens, since notifications sent meanwhile were missed.
 */
export async function listenChannel(db: Db, name: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
  let stopped = false;
  let unlisten: (() => Promise<void>) | null = null;
  let retry: NodeJS.Timeout | null = null;
  const subscribe = async () => {
    const channel = await channelName(db, name);
    if (stopped) return;
    const stop = await db.listen(channel, onNotify);
    if (stopped) await stop();
    else unlisten = stop;
  };
  try {
    await subscribe();
  } catch {
    let backoffMs = 250;
    const again = () => {
      retry = setTimeout(async () => {
        retry = null;
        try {
          await subscribe();
          if (!stopped) onNotify('');
        } catch {
          backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
          if (!stopped) again();
        }
      }, backoffMs);
      retry.unref();
    };
    again();
  }
  return async () => {
    stopped = true;
    if (retry) clearTimeout(retry);
    await unlisten?.();
  };
}
