import { Type } from '@sinclair/typebox';
import { validation } from './errors.js';

/**
 * The `expand` query parameter of a route offering `names`. It is validated as text by parseExpand
 * (which names an unknown field and lists the available ones); the OpenAPI document shows it as the
 * array of `names` it is, written comma-separated (`x-expand`, see server/openapi/document.ts).
 */
export function ExpandParam(names: readonly string[]) {
  return Type.Optional(Type.String({ maxLength: 200, description: `Comma-separated names to expand, one level: ${names.join(', ')}.`, 'x-expand': names }));
}

/**
 * Parses `expand` (docs/api.md#expand): comma-separated names, trimmed, duplicates ignored, one level only,
 * each from the endpoint's own set. Unknown or dotted names are a 400 that lists what is available.
 */
export function parseExpand(value: string | undefined, available: readonly string[]): Set<string> {
  const names = new Set<string>();
  if (value === undefined) return names;
  const list = available.length ? available.join(', ') : '(none)';
  for (const raw of value.split(',')) {
    const name = raw.trim();
    if (name === '') continue;
    if (name.includes('.')) {
      throw validation(`expand supports one level only: "${name}" is a nested path. Available: ${list}.`, [
        { path: 'expand', message: `nested path "${name}"` },
      ]);
    }
    if (!available.includes(name)) {
      throw validation(`Unknown expand field "${name}". Available: ${list}.`, [
        { path: 'expand', message: `unknown field "${name}"` },
      ]);
    }
    names.add(name);
  }
  return names;
}
