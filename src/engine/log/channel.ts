/**
 * The channel of the event log, with two kinds of payload `<origin>:<workspace id>,<workspace id>...`:
 * - without origin, sent at the commit of a transaction that wrote events: every process's sequencer
 *   (engine/log/sequencer.ts) is to give their batches positions;
 * - with the origin of the process whose sequencer has just done so: every process's event streams
 *   (events/stream/) have new events to send; the sender's own were told directly and skip it.
 * An empty list means every workspace. Named per schema (db/channels.ts): a workspace id is only
 * meaningful in its own schema.
 */
export const EVENT_CHANNEL = 'svc_events';

/** NOTIFY payloads must stay under 8000 bytes: past this many workspaces, one wake-up for all. */
export const MAX_LISTED = 200;

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
