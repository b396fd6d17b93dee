/**
 * The channel on which writes of events wake the event streams of every process (events/stream/).
 * A payload is `<origin>:<workspace id>,<workspace id>...`: the origin names the process that sent it
 * (its own streams were woken directly and skip it; empty when sent from inside a transaction, which
 * every process, the sender's too, must hear), and an empty list means every workspace. Named per
 * schema (db/channels.ts): a workspace id is only meaningful in its own schema.
 */
export const EVENT_CHANNEL = 'svc_events';

/** NOTIFY payloads must stay under 8000 bytes: past this many workspaces, one wake-up for all. */
const MAX_LISTED = 200;

export function eventWakePayload(origin: string, workspaceIds: Iterable<string>): string {
  const ids = [...workspaceIds];
  return `${origin}:${ids.length <= MAX_LISTED ? ids.join(',') : ''}`;
}

/** The origin and the workspaces (null: all) of a payload; a malformed one wakes every workspace. */
export function parseEventWake(payload: string): { origin: string; workspaceIds: string[] | null } {
  const colon = payload.indexOf(':');
  if (colon < 0) return { origin: '', workspaceIds: null };
  const list = payload.slice(colon + 1);
  return { origin: payload.slice(0, colon), workspaceIds: list === '' ? null : list.split(',') };
}
