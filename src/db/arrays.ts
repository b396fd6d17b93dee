/** What an array literal can hold here: text, numbers and booleans, any of them null. */
export type ArrayValue = string | number | boolean | null;

const ESCAPED = /["\\]/g;

/**
 * A PostgreSQL array literal (`{"a","b",NULL}`), to pass as one parameter and cast in SQL
 * (`$1::text[]`, `$2::int[]`, `$3::timestamptz[]`): texts quoted, their quotes and backslashes
 * escaped.
 */
export function arrayLiteral(values: readonly ArrayValue[]): string {
  let literal = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) literal += ',';
    const value = values[i];
    if (value === null) literal += 'NULL';
    else if (typeof value === 'string') literal += `"${value.replace(ESCAPED, '\\$&')}"`;
    else literal += String(value);
  }
  return literal + '}';
}
