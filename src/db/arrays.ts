/** What an array literal can hold here: text, numbers and booleans, any of them null. */
export type ArrayValue = string | number | boolean | null;

const NEEDS_ESCAPE = /["\\]/;
const ESCAPED = /["\\]/g;

/**
 * A PostgreSQL array literal (`{"a","b",NULL}`), to pass as one parameter and cast in SQL
 * (`$1::text[]`, `$2::int[]`, `$3::timestamptz[]`). node-postgres builds the same from a JavaScript
 * array, but runs every element through its generic value conversion and two regular-expression
 * replacements; for the outcome write of a delivery, whose thirteen columns travel as arrays, that
 * was about a sixth of the worker's instructions. Here each text is quoted and scanned once, and
 * escaped only if it holds a quote or a backslash.
 */
export function arrayLiteral(values: readonly ArrayValue[]): string {
  let literal = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) literal += ',';
    const value = values[i];
    if (value === null) literal += 'NULL';
    else if (typeof value === 'string') literal += `"${NEEDS_ESCAPE.test(value) ? value.replace(ESCAPED, '\\$&') : value}"`;
    else literal += String(value);
  }
  return literal + '}';
}
