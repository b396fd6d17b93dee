import { Type } from '@sinclair/typebox';
import { validation } from './errors.js';

/** The `createdGte` / `createdLte` filters of a list (inclusive bounds on createdAt), for its query schema. */
export const CreatedRange = {
  createdGte: Type.Optional(Type.String({ format: 'date-time', description: 'createdAt at or after this instant (ISO 8601 with offset).' })),
  createdLte: Type.Optional(Type.String({ format: 'date-time', description: 'createdAt at or before this instant (ISO 8601 with offset).' })),
};

/**
 * The schema checks the date-time shape; an instant it lets through that Date cannot hold (a leap
 * second such as 23:59:60) or that falls outside years 1-9999 once its offset is applied (which the
 * engines cannot both read) is refused here rather than reaching the database.
 */
export function instant(value: string | undefined, name: string): Date | undefined {
  if (value === undefined) return undefined;
  const date = new Date(value);
  const year = date.getUTCFullYear();
  if (Number.isNaN(date.getTime()) || year < 1 || year > 9999) {
    throw validation(`Invalid query: ${name} is not a valid ISO 8601 date-time.`, [{ path: `query.${name}`, message: 'not a valid date-time' }]);
  }
  return date;
}

/** The range of a request's query as instants. */
export function createdRange(query: { createdGte?: string; createdLte?: string }): { createdGte?: Date; createdLte?: Date } {
  return { createdGte: instant(query.createdGte, 'createdGte'), createdLte: instant(query.createdLte, 'createdLte') };
}
