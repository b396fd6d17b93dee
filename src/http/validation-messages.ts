import type { FastifySchemaValidationError } from 'fastify/types/schema.js';
import { CURRENCY_PATTERN } from '../lib/money.js';
import type { ErrorDetail } from './errors.js';

type AjvError = FastifySchemaValidationError & { propertyName?: string };

/**
 * An error ready to describe: Ajv's own, or one that stands for a whole union. `kinds` lists what a
 * value of the right kind would have been ("a string", "null", `"pending"`), for unions whose
 * branches all refused the value's kind.
 */
interface Item {
  instancePath: string;
  schemaPath: string;
  keyword: string;
  params: Record<string, unknown>;
  message: string;
  kinds?: string[];
  /** Values of an enum or of const branches, listed as the allowed ones. */
  values?: string[];
}

const PART_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'a boolean',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

const FORMATS: Record<string, string> = {
  'date-time': 'an ISO 8601 date-time with a time zone, such as 2026-01-31T12:00:00Z',
  email: 'an e-mail address',
  uri: 'an absolute URL',
};

/** Printable ASCII, space to tilde: a pattern for header values (Idempotency-Key). */
export const PRINTABLE_ASCII = '^[\\x20-\\x7E]*$';

/** Patterns described in words rather than shown; a module that declares a pattern adds its words (describePattern). */
const PATTERNS: Record<string, string> = {
  [PRINTABLE_ASCII]: 'must be printable ASCII characters only (space to ~)',
  [CURRENCY_PATTERN]: 'must be an ISO 4217 currency code such as USD, EUR or JPY (upper case)',
};

/** A schema pattern with the words a refusal uses for it instead of showing the pattern; returns the pattern. */
export function describePattern(pattern: string, words: string): string {
  PATTERNS[pattern] = words;
  return pattern;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** One of: `a`; `a or b`; `a, b or c`. */
function either(options: string[]): string {
  return options.length <= 1 ? (options[0] ?? '') : `${options.slice(0, -1).join(', ')} or ${options[options.length - 1]}`;
}

/** A sentence for one of Ajv's keywords, naming limits and allowed values instead of Ajv's wording. */
function sentence(e: AjvError): Pick<Item, 'message' | 'kinds' | 'values'> {
  const p = e.params as Record<string, unknown>;
  const limit = p.limit as number;
  switch (e.keyword) {
    case 'type': {
      const kinds = String(p.type).split(',').map((t) => TYPE_NAMES[t] ?? t);
      return { message: `must be ${either(kinds)}`, kinds };
    }
    case 'const': {
      const value = String(p.allowedValue);
      return { message: `must be "${value}"`, values: [value] };
    }
    case 'enum': {
      const values = (p.allowedValues as unknown[]).map(String);
      return { message: `must be one of: ${values.join(', ')}`, values };
    }
    case 'minLength':
      return { message: limit === 1 ? 'must not be empty' : `must be at least ${plural(limit, 'character')} long` };
    case 'maxLength':
      return { message: `must be at most ${plural(limit, 'character')} long` };
    case 'minimum':
      return { message: `must be at least ${limit}` };
    case 'maximum':
      return { message: `must be at most ${limit}` };
    case 'exclusiveMinimum':
      return { message: `must be more than ${limit}` };
    case 'exclusiveMaximum':
      return { message: `must be less than ${limit}` };
    case 'minItems':
      return { message: `must have at least ${plural(limit, 'item')}` };
    case 'maxItems':
      return { message: `must have at most ${plural(limit, 'item')}` };
    case 'minProperties':
      return { message: limit === 1 ? 'must set at least one field' : `must have at least ${plural(limit, 'key')}` };
    case 'maxProperties':
      return { message: `must have at most ${plural(limit, 'key')}` };
    case 'format':
      return { message: `must be ${FORMATS[String(p.format)] ?? `a valid ${p.format}`}` };
    case 'pattern':
      return { message: PATTERNS[String(p.pattern)] ?? `must match the pattern ${p.pattern}` };
    default:
      return { message: e.message ?? 'is invalid' };
  }
}

/** Keywords that refuse a value's kind rather than something inside a value of the right kind. */
const KIND_KEYWORDS = new Set(['type', 'const', 'enum']);

/**
 * A union (anyOf/oneOf) reports every branch's error and then its own "must match a schema in
 * anyOf". When some branch accepted the value's kind and failed inside it (a fractional
 * `price.amount`, an unknown field of `price`), that branch's errors are the answer and the others'
 * ("must be null") are noise. When every branch refused the kind, the union is described once:
 * its allowed values ("must be one of: pending, success"), or its kinds ("must be an object or null").
 */
function union(e: AjvError, branches: Item[]): Item[] {
  const inside = branches.filter((b) => !(b.instancePath === e.instancePath && (KIND_KEYWORDS.has(b.keyword) || b.kinds || b.values)));
  if (inside.length > 0) return inside;
  const values = branches.flatMap((b) => b.values ?? []);
  const kinds = [...new Set(branches.flatMap((b) => b.kinds ?? []))];
  const base = { instancePath: e.instancePath, schemaPath: e.schemaPath, keyword: e.keyword, params: {} };
  if (kinds.length === 0 && values.length > 0) return [{ ...base, message: `must be one of: ${values.join(', ')}`, values }];
  const options = [...kinds, ...values.map((v) => `"${v}"`)];
  return [{ ...base, message: `must be ${either(options)}`, kinds: options }];
}

/** Ajv's errors in order, with each union's branch errors folded into what the union means. */
function simplify(errors: AjvError[]): Item[] {
  const items: Item[] = [];
  for (const e of errors) {
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf') {
      const prefix = `${e.schemaPath}/`;
      const branches = items.filter((i) => i.schemaPath.startsWith(prefix));
      const rest = items.filter((i) => !i.schemaPath.startsWith(prefix));
      items.length = 0;
      items.push(...rest, ...union(e, branches));
    } else if (e.keyword === 'propertyNames') {
      // Its inner error, which names the key, came first and says it better.
      continue;
    } else {
      const described = sentence(e);
      if (e.propertyName !== undefined) described.message = `key "${e.propertyName}" ${described.message}`;
      items.push({ instancePath: e.instancePath, schemaPath: e.schemaPath, keyword: e.keyword, params: e.params as Record<string, unknown>, ...described });
    }
  }
  return items;
}

function detail(part: string, item: Item): ErrorDetail {
  const { params } = item;
  const at = item.instancePath ? item.instancePath.slice(1).replace(/\//g, '.') : '';
  if (item.keyword === 'additionalProperties') {
    const field = [at, params.additionalProperty].filter(Boolean).join('.');
    return { path: `${part}.${field}`, message: `unknown field "${field}"` };
  }
  if (item.keyword === 'required') {
    const field = [at, params.missingProperty].filter(Boolean).join('.');
    return { path: `${part}.${field}`, message: `"${field}" is required` };
  }
  return { path: at ? `${part}.${at}` : part, message: item.message };
}

/**
 * Turns Ajv's errors into the envelope's message and `details`: each names its field and says what
 * is allowed (an enum's values, a limit, the kinds of a union), unknown fields are named outright,
 * and a union adds no "must be null" or "must match a schema in anyOf".
 */
export function describeValidationErrors(errors: FastifySchemaValidationError[], context: string): { message: string; details: ErrorDetail[] } {
  const part = PART_NAMES[context] ?? context;
  const details = simplify(errors as AjvError[]).map((item) => detail(part, item));
  const first = details[0];
  return { message: first ? `Invalid ${part}: ${first.path}: ${first.message}.` : `Invalid ${part}.`, details };
}
