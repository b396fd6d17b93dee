import fc from 'fast-check';

/**
 * Request generators for every operation of the service's own OpenAPI document, so that routes
 * added later are fuzzed without touching the fuzzing suite: bodies, path ids and query values
 * follow the schemas ("valid-ish"), and hostile variants replace any part of them.
 */
type Schema = Record<string, any>;

export interface OpenApiDoc {
  paths: Record<string, Record<string, { parameters?: Parameter[]; requestBody?: { content?: Record<string, { schema: Schema }> } }>>;
  components?: { schemas?: Record<string, Schema> };
}

interface Parameter {
  in: 'path' | 'query' | 'header';
  name: string;
  required?: boolean;
  schema: Schema;
}

export interface Operation {
  method: string;
  path: string;
  pathParams: string[];
  query: Parameter[];
  body: Schema | null;
}

export function operations(doc: OpenApiDoc): Operation[] {
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => {
      const params = op.parameters ?? [];
      return {
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        query: params.filter((p) => p.in === 'query'),
        body: op.requestBody?.content?.['application/json']?.schema ?? null,
      };
    }),
  );
}

/** Strings an attacker tries: NUL, control and bidi characters, lone surrogates, huge, SQL and path tricks. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\ud800',
    '\udfff\ud800',
    '\u202e',
    '\ufeff',
    '\r\n',
    '💩',
    'é',
    "' OR 1=1 --",
    '"; DROP TABLE products; --',
    '../../etc/passwd',
    '%00',
    '%',
    '%FF',
    '__proto__',
    'constructor',
    '${jndi:ldap://x}',
    '<script>',
    '1e309',
    '-0',
    'NaN',
    'null',
    'true',
    '[]',
    '{}',
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.integer({ min: 1, max: 5 }).map((e) => 'x'.repeat(10 ** e)),
);

const hostileNumber = fc.constantFrom(1e308, -1e308, -0, -1, 0, 0.5, 2 ** 53 + 1, -(2 ** 31), 2 ** 31, 1e21);

/** Any JSON value of a small size, of any type. */
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  hostileString,
  hostileNumber,
  fc.constant(null),
  fc.boolean(),
  fc.array(hostileString, { maxLength: 3 }),
  fc.dictionary(hostileString, hostileString, { maxKeys: 3 }),
);

export class SchemaArbitraries {
  constructor(
    private readonly doc: OpenApiDoc,
    /** Values known to be valid for a property name (ids, URLs, catalog types), mixed in often. */
    private readonly hints: Record<string, fc.Arbitrary<unknown>>,
  ) {}

  private resolve(schema: Schema): Schema {
    let current = schema;
    for (let i = 0; current?.$ref && i < 10; i++) {
      const name = String(current.$ref).split('/').pop()!;
      current = this.doc.components?.schemas?.[name] ?? {};
    }
    return current ?? {};
  }

  /** A value that fits `schema` (strings shortened), or, with `hostile`, sometimes one that does not. */
  value(schema: Schema, hostile: boolean, name?: string, depth = 0): fc.Arbitrary<unknown> {
    const valid = this.valid(this.resolve(schema), hostile, name, depth);
    return hostile ? fc.oneof({ arbitrary: valid, weight: 4 }, { arbitrary: anyJson, weight: 1 }) : valid;
  }

  private valid(s: Schema, hostile: boolean, name: string | undefined, depth: number): fc.Arbitrary<unknown> {
    const hint = name ? this.hints[name] : undefined;
    const own = this.own(s, hostile, depth);
    return hint ? fc.oneof({ arbitrary: hint, weight: 3 }, { arbitrary: own, weight: 1 }) : own;
  }

  private own(s: Schema, hostile: boolean, depth: number): fc.Arbitrary<unknown> {
    if ('const' in s) return fc.constant(s.const);
    if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
    const union = s.anyOf ?? s.oneOf;
    if (Array.isArray(union)) return fc.oneof(...union.map((u: Schema) => this.value(u, hostile, undefined, depth)));
    if (Array.isArray(s.allOf)) return this.value(Object.assign({}, ...s.allOf.map((p: Schema) => this.resolve(p))), hostile, undefined, depth);
    const type = Array.isArray(s.type) ? s.type[0] : s.type;
    switch (type) {
      case 'null':
        return fc.constant(null);
      case 'boolean':
        return fc.boolean();
      case 'integer':
        return fc.integer({ min: s.minimum ?? -1000, max: Math.min(s.maximum ?? 1_000_000, Number.MAX_SAFE_INTEGER) });
      case 'number':
        return fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true });
      case 'string':
        return this.string(s);
      case 'array':
        return depth > 4
          ? fc.constant([])
          : fc.array(this.value(s.items ?? {}, hostile, undefined, depth + 1), {
              minLength: s.minItems ?? 0,
              maxLength: Math.min(s.maxItems ?? 4, 4),
            });
      case 'object':
      default:
        return depth > 4 ? fc.constant({}) : this.object(s, hostile, depth);
    }
  }

  private string(s: Schema): fc.Arbitrary<string> {
    if (s.format === 'date-time') {
      return fc.oneof(
        { arbitrary: fc.date({ min: new Date('1970-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString()), weight: 4 },
        {
          // Shapes the format admits at the edges of what a Date or PostgreSQL holds.
          arbitrary: fc.constantFrom(
            '0000-01-01T00:00:00Z',
            '9999-12-31T23:59:59.999Z',
            '2016-12-31T23:59:60Z',
            '2020-01-01T00:00:00+23:59',
            '2020-01-01t00:00:00z',
            '2020-01-01T00:00:00.123456789Z',
            '1969-12-31T23:59:59.999-00:00',
          ),
          weight: 1,
        },
      );
    }
    if (typeof s.pattern === 'string') return fc.stringMatching(new RegExp(s.pattern));
    const min = s.minLength ?? 0;
    return fc.string({ minLength: min, maxLength: Math.max(min, Math.min(s.maxLength ?? 30, 30)) });
  }

  private object(s: Schema, hostile: boolean, depth: number): fc.Arbitrary<unknown> {
    const props: Record<string, Schema> = s.properties ?? {};
    const required = new Set<string>(s.required ?? []);
    const shape = Object.fromEntries(Object.entries(props).map(([key, sub]) => [key, this.value(sub, hostile, key, depth + 1)]));
    const base = fc.record(shape, { requiredKeys: [...required].filter((k) => k in props) });
    const extra =
      s.additionalProperties && typeof s.additionalProperties === 'object'
        ? fc.dictionary(this.string(s.propertyNames ?? { minLength: 1, maxLength: 10 }), this.value(s.additionalProperties, hostile, undefined, depth + 1), {
            maxKeys: 3,
          })
        : fc.constant({});
    const unknown = hostile ? fc.option(fc.dictionary(hostileString, anyJson, { minKeys: 1, maxKeys: 2 }), { freq: 4 }) : fc.constant(null);
    return fc.tuple(base, extra, unknown).map(([b, e, u]) => ({ ...(e as object), ...(b as object), ...(u ?? {}) }));
  }
}
