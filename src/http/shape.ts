import { Kind, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { toIso } from '../lib/iso.js';

/**
 * A resource's shape, declared once: its TypeBox schema (which validates, serialises and documents
 * it) is the source from which the columns to select, the row→view mapping and the SQL that renders
 * its JSON text are derived. A field `createdAt` is read from the column `created_at`; a date-time
 * becomes ISO 8601 text, an integer a number (bigint columns arrive as text); strings, booleans and
 * JSON values are taken as they are. A field that does not follow that rule says how it is read
 * (`FieldSource`); adding a field that does is one edit: its schema property.
 */

/** A row as the database returns it. */
export type Row = Record<string, unknown>;

/** Part of a JSON text rendered in SQL: literal JSON text, or an SQL expression giving JSON text. */
export type JsonPiece = { text: string } | { sql: string };

/** How one field comes from its row, when the schema's rule does not fit. */
export interface FieldSource {
  /** Columns the field is read from, in order. */
  columns: string[];
  read(row: Row): unknown;
  /** SQL rendering the field's JSON text; null: serialised in JavaScript from read() (see ShapeJson). */
  json: JsonPiece[] | null;
}

/**
 * How each field is read: a FieldSource, `{column}` for the rule on a column of another name, or
 * false for a field that does not come from the row (its owner adds it, e.g. an expansion).
 */
export type FieldSources<S extends TObject> = { [K in keyof S['properties']]?: FieldSource | { column: string } | false };

/** The JSON text of rows rendered by the database, split where JavaScript serialises a field itself. */
export interface ShapeJson {
  /** Select-list items: the columns of the fields serialised in JavaScript, then `json_0`, `json_1`, ... */
  select: string;
  /** The JSON text of a row selected with `select`, byte for byte what the schema's serialiser writes for view(). */
  text(row: Row): string;
}

export interface Shape<S extends TObject> {
  schema: S;
  /** The columns every field is read from, as a select list: `id, name, ..., updated_at`. */
  columns: string;
  /** The view of a row; fields that do not come from the row (false in FieldSources) are taken from `apart` when given there. */
  view(row: object, apart?: Partial<Static<S>>): Static<S>;
  json: ShapeJson;
}

export const snakeCase = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** ISO 8601 in UTC with milliseconds, as toIso writes it (stored times have millisecond precision). */
const ISO_FORMAT = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

type Rule = 'time' | 'number' | 'string' | 'boolean' | 'json';

const isNull = (s: TSchema) => s[Kind] === 'Null';

/** The rule of a schema, and whether it admits null (a union with Null). */
function ruleOf(schema: TSchema): { rule: Rule; nullable: boolean } {
  let inner: TSchema = schema;
  let nullable = false;
  if (schema[Kind] === 'Union' && (schema.anyOf as TSchema[]).some(isNull)) {
    nullable = true;
    const rest = (schema.anyOf as TSchema[]).filter((s) => !isNull(s));
    inner = rest.length === 1 ? rest[0] : { ...schema, anyOf: rest };
  }
  if (inner.format === 'date-time') return { rule: 'time', nullable };
  const kind = inner[Kind];
  if (kind === 'Integer' || kind === 'Number') return { rule: 'number', nullable };
  if (kind === 'Boolean') return { rule: 'boolean', nullable };
  const literalStrings = (s: TSchema): boolean =>
    s[Kind] === 'String' || (s[Kind] === 'Literal' && typeof s.const === 'string') || (s[Kind] === 'Union' && (s.anyOf as TSchema[]).every(literalStrings));
  if (literalStrings(inner)) return { rule: 'string', nullable };
  return { rule: 'json', nullable };
}

/** The schema's rule applied to one column. */
function ruleSource(column: string, schema: TSchema): FieldSource {
  const { rule, nullable } = ruleOf(schema);
  const orNull = (sql: string): JsonPiece[] => [{ sql: nullable ? `coalesce(${sql}, 'null')` : sql }];
  switch (rule) {
    case 'time': {
      const iso = `to_char(${column} AT TIME ZONE 'UTC', ${ISO_FORMAT})`;
      return {
        columns: [column],
        read: (row) => (row[column] == null ? null : toIso(row[column] as Date)),
        json: nullable ? [{ sql: `CASE WHEN ${column} IS NULL THEN 'null' ELSE '"' || ${iso} || '"' END` }] : [{ text: '"' }, { sql: iso }, { text: '"' }],
      };
    }
    case 'number':
      return { columns: [column], read: (row) => (row[column] == null ? null : Number(row[column])), json: orNull(`${column}::text`) };
    case 'boolean':
      return { columns: [column], read: (row) => row[column], json: orNull(`${column}::text`) };
    case 'string':
      return { columns: [column], read: (row) => row[column], json: orNull(`to_json(${column})::text`) };
    case 'json':
      return { columns: [column], read: (row) => row[column], json: null };
  }
}

/** An SQL string literal. */
const literal = (text: string) => `'${text.replace(/'/g, "''")}'`;

/** Pieces as one SQL expression, adjacent literal texts merged. */
function concat(pieces: JsonPiece[]): string {
  const parts: string[] = [];
  let text = '';
  for (const piece of pieces) {
    if ('text' in piece) {
      text += piece.text;
      continue;
    }
    if (text) parts.push(literal(text));
    text = '';
    parts.push(piece.sql);
  }
  if (text) parts.push(literal(text));
  return parts.join(' || ');
}

/** The shape of the resource `schema` (an object schema), its fields read as `sources` say or by the rule. */
export function shape<S extends TObject>(schema: S, sources: FieldSources<S> = {}): Shape<S> {
  const fields: { key: string; source: FieldSource }[] = [];
  /** Every field in schema order, null for those that do not come from the row. */
  const order: { key: string; source: FieldSource | null }[] = [];
  for (const [key, property] of Object.entries(schema.properties as Record<string, TSchema>)) {
    const given = sources[key as keyof S['properties']] as FieldSource | { column: string } | false | undefined;
    const source = given === false ? null : given && 'read' in given ? given : ruleSource(given?.column ?? snakeCase(key), property);
    order.push({ key, source });
    if (source) fields.push({ key, source });
  }
  const columns = [...new Set(fields.flatMap((f) => f.source.columns))].join(', ');

  const view = (row: object, apart?: Partial<Static<S>>): Static<S> => {
    const out: Row = {};
    for (const { key, source } of order) {
      if (source) out[key] = source.read(row as Row);
      else if (apart && (apart as Row)[key] !== undefined) out[key] = (apart as Row)[key];
    }
    return out as Static<S>;
  };

  // The JSON text: segments rendered in SQL, between the fields JavaScript serialises.
  const segments: JsonPiece[][] = [[]];
  const inJs: FieldSource[] = [];
  fields.forEach(({ key, source }, i) => {
    segments[segments.length - 1].push({ text: `${i === 0 ? '{' : ','}${JSON.stringify(key)}:` });
    if (source.json) {
      segments[segments.length - 1].push(...source.json);
    } else {
      inJs.push(source);
      segments.push([]);
    }
  });
  segments[segments.length - 1].push({ text: '}' });
  const jsColumns = [...new Set(inJs.flatMap((s) => s.columns))];
  const names = segments.map((_, i) => `json_${i}`);
  const json: ShapeJson = {
    select: [...jsColumns, ...segments.map((pieces, i) => `${concat(pieces)} AS ${names[i]}`)].join(', '),
    text: (row) => {
      let text = row.json_0 as string;
      for (let i = 0; i < inJs.length; i++) text += JSON.stringify(inJs[i].read(row)) + (row[names[i + 1]] as string);
      return text;
    },
  };
  return { schema, columns, view, json };
}
