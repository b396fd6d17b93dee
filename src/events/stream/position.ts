import { idTime } from '../../lib/ids.js';

/**
 * A place in the event log's order, (created_at, id) ascending. `id` null stands after every event
 * of the millisecond `at`: "everything up to and including `at`".
 */
export interface Position {
  at: number;
  id: string | null;
}

/** An event as the stream reads it from the log. */
export interface LogEvent {
  id: string;
  type: string;
  /** created_at, in milliseconds. */
  at: number;
  /** The stored body, sent as it is. */
  body: string;
}

/** Right after the event `id` (Last-Event-ID, `after`): its time is the start of the id. */
export function afterEvent(id: string): Position {
  return { at: idTime(id), id };
}

/** Everything up to and including the millisecond `at`. */
export function through(at: number): Position {
  return { at, id: null };
}

/** Negative, zero or positive as `a` comes before, at or after `b`. */
export function compare(a: Position, b: Position): number {
  if (a.at !== b.at) return a.at - b.at;
  if (a.id === b.id) return 0;
  if (a.id === null) return 1;
  if (b.id === null) return -1;
  return a.id < b.id ? -1 : 1;
}

/** True when the event comes after the position. */
export function isAfter(event: LogEvent, position: Position): boolean {
  return compare({ at: event.at, id: event.id }, position) > 0;
}

export function later(a: Position, b: Position): Position {
  return compare(a, b) >= 0 ? a : b;
}
