/**
 * The reference page's pieces of text: escaping, the few Markdown forms descriptions use (code,
 * links, paragraphs), and JSON Schemas written out as nested lists of properties. Component
 * schemas are linked by name (`#schema-Product`), never inlined, so that each is written once.
 */

type Schema = Record<string, any>;

export function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A link target a description may hold: this service's own paths, or http(s). */
const safeHref = (href: string) => /^(\/|#|https?:\/\/)/.test(href);

/** One paragraph's inline Markdown: `code` and [text](href); everything else as text. */
function inline(text: string): string {
  let out = '';
  let last = 0;
  for (const match of text.matchAll(/`([^`]+)`|\[([^\]]+)\]\(([^)\s]+)\)/g)) {
    out += escape(text.slice(last, match.index));
    if (match[1] !== undefined) out += `<code>${escape(match[1])}</code>`;
    else if (safeHref(match[3])) out += `<a href="${escape(match[3])}">${escape(match[2])}</a>`;
    else out += escape(match[0]);
    last = match.index + match[0].length;
  }
  return out + escape(text.slice(last));
}

/** A description's Markdown as paragraphs (and lists, for lines starting with "- "). */
export function markdown(text: string | undefined): string {
  if (!text) return '';
  return text
    .split(/\n{2,}/)
    .map((block) => {
      const lines = block.split('\n');
      if (lines.every((line) => line.startsWith('- '))) return `<ul>${lines.map((line) => `<li>${inline(line.slice(2))}</li>`).join('')}</ul>`;
      return `<p>${inline(block)}</p>`;
    })
    .join('');
}

/** A description inside a list item: one paragraph runs on after a dash, more stay paragraphs. */
export function brief(text: string | undefined): string {
  if (!text) return '';
  return /\n\n/.test(text) || text.startsWith('- ') ? markdown(text) : ` — ${inline(text)}`;
}

/** The component a `$ref` names: `#/components/schemas/Product` → `Product`. */
export const refName = (ref: string) => ref.slice(ref.lastIndexOf('/') + 1);

export const schemaAnchor = (name: string) => `schema-${name}`;

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

function alternatives(schema: Schema): Schema[] | null {
  return schema.anyOf ?? schema.oneOf ?? null;
}

/** A schema's type in a few words, a component named as a link: `array of Product`, `string or null`. */
export function typeOf(schema: Schema | undefined): string {
  if (!schema) return 'any';
  if (schema.$ref) return `<a href="#${schemaAnchor(refName(schema.$ref))}">${escape(refName(schema.$ref))}</a>`;
  const options = alternatives(schema);
  if (options) {
    // A union of single values (an error code, say) is an enum.
    const values = options.map((o) => (Array.isArray(o.enum) && o.enum.length === 1 ? o.enum[0] : o.const));
    if (values.every((v) => v !== undefined)) return `${escape(String(options[0].type ?? 'value'))}, one of ${values.map((v) => `<code>${escape(String(v))}</code>`).join(', ')}`;
    return [...new Set(options.map(typeOf))].join(' or ');
  }
  const types: string[] = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : schema.properties ? ['object'] : [];
  const words = types.map((type) => {
    if (type === 'array') return `array of ${typeOf(schema.items)}`;
    if (type === 'object' && schema.additionalProperties && typeof schema.additionalProperties === 'object' && !schema.properties) return `map of ${typeOf(schema.additionalProperties)}`;
    return escape(type) + (schema.format ? ` (${escape(schema.format)})` : '');
  });
  return words.join(' or ') || 'any';
}

/** What a schema allows beyond its type: values, bounds, pattern, default, an example. */
export function constraints(schema: Schema): string[] {
  const notes: string[] = [];
  if (Array.isArray(schema.enum) && schema.enum.length > 1) notes.push(`one of ${schema.enum.map((v: unknown) => `<code>${escape(String(v))}</code>`).join(', ')}`);
  const bound = (low: string, high: string, unit: string) => {
    if (schema[low] !== undefined && schema[high] !== undefined) notes.push(`${schema[low]}-${schema[high]}${unit}`);
    else if (schema[low] !== undefined) notes.push(`at least ${schema[low]}${unit}`);
    else if (schema[high] !== undefined) notes.push(`at most ${schema[high]}${unit}`);
  };
  bound('minLength', 'maxLength', ' characters');
  bound('minimum', 'maximum', '');
  bound('minItems', 'maxItems', ' items');
  bound('minProperties', 'maxProperties', ' keys');
  if (schema.pattern) notes.push(`pattern <code>${escape(clip(schema.pattern, 60))}</code>`);
  if (schema.default !== undefined) notes.push(`default <code>${escape(JSON.stringify(schema.default))}</code>`);
  const example = schema.examples?.[0] ?? schema.example;
  if (example !== undefined && typeof example !== 'object') notes.push(`example <code>${escape(clip(String(example), 80))}</code>`);
  return notes;
}

/** The object schema whose properties a schema shows: itself, its array's items, or its one non-null alternative. */
function objectOf(schema: Schema | undefined): Schema | null {
  if (!schema || schema.$ref) return null;
  if (schema.properties) return schema;
  if (schema.type === 'array') return objectOf(schema.items);
  const options = alternatives(schema)?.filter((o) => o.type !== 'null');
  return options?.length === 1 ? objectOf(options[0]) : null;
}

/** A schema's properties as a nested list: name, type, required, description, constraints. */
export function properties(schema: Schema | undefined, depth = 0): string {
  const object = objectOf(schema);
  if (!object || depth > 5) return '';
  const required = new Set<string>(object.required ?? []);
  const items = Object.entries(object.properties as Record<string, Schema>).map(([name, property]) => {
    const notes = constraints(property);
    const description = property.description ?? alternatives(property)?.find((o) => o.description)?.description;
    return (
      `<li><code>${escape(name)}</code> ${typeOf(property)}${required.has(name) ? ', required' : ''}` +
      brief(description) +
      (notes.length ? `<span class="notes">${notes.join('; ')}</span>` : '') +
      properties(property, depth + 1) +
      '</li>'
    );
  });
  return `<ul class="props">${items.join('')}</ul>`;
}

/** A schema in full: its type, description and properties (a component as a link, written out where it is defined). */
export function schemaBlock(schema: Schema | undefined): string {
  if (!schema) return '';
  const notes = constraints(schema);
  return (
    `<p>Type: ${typeOf(schema)}</p>` +
    (schema.$ref ? '' : markdown(schema.description)) +
    (notes.length ? `<p class="notes">${notes.join('; ')}</p>` : '') +
    properties(schema)
  );
}
