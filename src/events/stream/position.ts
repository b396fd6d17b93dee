/**
 * An event's place in the log's order (migrations/019): its batch's position, then its index in the
 * batch (from 1). `index` END stands after every event of the batch.
 */
export interface Position {
  batch: number;
  index: number;
}

export const END = Number.MAX_SAFE_INTEGER;

/** An event as the stream reads it from the log. */
export interface LogEvent {
  id: string;
  type: string;
  /** The stored body, sent as it is. */
  body: string;
  position: Position;
}

/** Negative, zero or positive as `a` comes before, at or after `b`. */
export function compare(a: Position, b: Position): number {
  return a.batch !== b.batch ? a.batch - b.batch : a.index - b.index;
}

export function later(a: Position, b: Position): Position {
  return compare(a, b) >= 0 ? a : b;
}
