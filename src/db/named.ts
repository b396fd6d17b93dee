const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;

/** Statements translated, by their text (bounded: cleared when full). */
const translated = new Map<string, { sql: string; names: string[] }>();
const MAX_TRANSLATED = 1_000;

/** `sql` with `$n` for each `:name` (one `$n` per name, however often it appears), and the names in order. */
function translate(sql: string): { sql: string; names: string[] } {
  const names: string[] = [];
  let out = '';
  let quote: string | null = null;
  for (let i = 0; i < sql.length; i++) {
    const char = sql[i];
    if (quote) {
      if (char === quote) quote = null;
    } else if (char === "'" || char === '"') {
      quote = char;
    } else if (char === ':' && sql[i - 1] !== ':' && sql[i + 1] !== ':') {
      NAME.lastIndex = i + 1;
      const match = NAME.exec(sql);
      if (match) {
        let n = names.indexOf(match[0]);
        if (n < 0) n = names.push(match[0]) - 1;
        out += `$${n + 1}`;
        i += match[0].length;
        continue;
      }
    }
    out += char;
  }
  return { sql: out, names };
}

/**
 * A statement with named parameters (`:name`) as PostgreSQL takes it: `$n` placeholders and their
 * values in order. `::type` casts and anything inside quotes are left alone. A name without a
 * value is an error, not a NULL.
 */
export function named(sql: string, values: Record<string, unknown>): { sql: string; params: unknown[] } {
  let statement = translated.get(sql);
  if (!statement) {
    statement = translate(sql);
    if (translated.size >= MAX_TRANSLATED) translated.clear();
    translated.set(sql, statement);
  }
  return {
    sql: statement.sql,
    params: statement.names.map((name) => {
      if (!(name in values)) throw new Error(`no value for :${name}`);
      return values[name];
    }),
  };
}

/** `column = :column` for each field given (not undefined): a PATCH's SET list; null clears a column. */
export function assignments(fields: Record<string, unknown>): { sql: string; values: Record<string, unknown> } {
  const given = Object.entries(fields).filter(([, value]) => value !== undefined);
  return { sql: given.map(([column]) => `${column} = :${column}`).join(', '), values: Object.fromEntries(given) };
}
