import { createHash } from 'node:crypto';
import { REFERENCE_CSS } from './reference-assets.js';
import { brief, constraints, escape, markdown, properties, schemaAnchor, schemaBlock, typeOf } from './reference-schema.js';

/**
 * The API reference at /docs: the OpenAPI document written out as one HTML page (every operation by
 * tag, the webhooks, the schemas), readable without JavaScript; a small script adds a filter.
 * Built once from the document and kept (docs.ts).
 */

type Node = Record<string, any>;

interface Entry {
  id: string;
  method: string;
  path: string;
  op: Node;
  webhook: boolean;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** The hash of the page's one style element, for the page's content security policy. */
export const STYLE_HASH = `'sha256-${createHash('sha256').update(REFERENCE_CSS).digest('base64')}'`;

const tagAnchor = (tag: string) => `tag-${tag.replace(/[^A-Za-z0-9]+/g, '-')}`;

/** A component a `$ref` points at (parameters and headers), or the node itself. */
function deref(doc: Node, node: Node): Node {
  const ref = node.$ref as string | undefined;
  if (!ref?.startsWith('#/components/')) return node;
  const [, , kind, name] = ref.split('/');
  return doc.components?.[kind]?.[name] ?? node;
}

function entries(doc: Node): Entry[] {
  const all: Entry[] = [];
  for (const [section, webhook] of [['paths', false], ['webhooks', true]] as const) {
    for (const [path, item] of Object.entries((doc[section] ?? {}) as Record<string, Node>)) {
      for (const method of METHODS) {
        const op = item[method] as Node | undefined;
        if (op) all.push({ id: op.operationId ?? `${method}-${path}`, method, path, op, webhook });
      }
    }
  }
  return all;
}

const methodBadge = (method: string) => `<span class="method m-${method}">${method.toUpperCase()}</span>`;

function parametersBlock(doc: Node, op: Node, heading: string): string {
  const params = ((op.parameters ?? []) as Node[]).map((p) => deref(doc, p));
  if (!params.length) return '';
  const items = params.map((p) => {
    const notes = constraints(p.schema ?? {});
    if (p.example !== undefined && !notes.some((n) => n.startsWith('example'))) notes.push(`example <code>${escape(String(p.example))}</code>`);
    return (
      `<li><code>${escape(p.name)}</code> ${escape(p.in)}, ${typeOf(p.schema)}${p.required ? ', required' : ''}` +
      brief(p.description) +
      (notes.length ? `<span class="notes">${notes.join('; ')}</span>` : '') +
      '</li>'
    );
  });
  return `<h4>${heading}</h4><ul class="props">${items.join('')}</ul>`;
}

function bodyBlock(op: Node): string {
  const body = op.requestBody as Node | undefined;
  if (!body) return '';
  const media = Object.entries((body.content ?? {}) as Record<string, Node>);
  return (
    `<h4>Request body</h4>` +
    media.map(([type, { schema }]) => `<p><code>${escape(type)}</code>${body.required ? ', required' : ', optional'}</p>${schemaBlock(schema)}`).join('')
  );
}

/** One answer: status, description, body type (an inline body's properties too), headers. */
function response(status: string, answer: Node): string {
  const media = Object.entries((answer.content ?? {}) as Record<string, Node>);
  const body = media.map(([type, { schema }]) => `<span class="notes">Body: ${typeOf(schema)} (${escape(type)})</span>${schema && !schema.$ref ? properties(schema) : ''}`).join('');
  const headers = Object.keys(answer.headers ?? {});
  return `<li><b>${escape(status)}</b>${brief(answer.description)}${body}${headers.length ? `<span class="notes">Headers: ${escape(headers.join(', '))}</span>` : ''}</li>`;
}

/** The error codes a response's description explains: `VALIDATION: …. INVALID_STATE: …`. */
export function errorCodes(description: string | undefined): { code: string; text: string }[] {
  return [...(description ?? '').matchAll(/(?:^|\.\s+)([A-Z][A-Z_]+): (.*?)(?=\.\s+[A-Z][A-Z_]+: |$)/gs)].map((m) => ({ code: m[1], text: m[2] }));
}

/** Successes in full; errors as their statuses and codes, explained once for all (errorsSection). */
function responsesBlock(op: Node): string {
  const all = Object.entries((op.responses ?? {}) as Record<string, Node>);
  const success = all.filter(([status]) => !/^[45]/.test(status));
  const errors = all.filter(([status]) => /^[45]/.test(status));
  let html = success.length ? `<h4>Responses</h4><ul class="answers">${success.map(([s, a]) => response(s, a)).join('')}</ul>` : '';
  if (errors.length) {
    const links = errors.map(([status, answer]) => {
      const codes = errorCodes(answer.description).map((e) => e.code);
      return `${escape(status)} ${codes.join(' or ') || escape(answer.description ?? '')}`;
    });
    const bodies = new Set(errors.map(([, a]) => typeOf(Object.values((a.content ?? {}) as Record<string, Node>)[0]?.schema)));
    html += `<h4>Errors</h4><p>${links.join(', ')} (<a href="#errors">what each means</a>). Body: ${[...bodies].join(', ')}.</p>`;
  }
  return html;
}

/** Every error code the operations answer, once: its status and what it means. */
function errorsSection(doc: Node): string {
  const seen = new Map<string, string>();
  for (const { op } of entries(doc)) {
    for (const [status, answer] of Object.entries((op.responses ?? {}) as Record<string, Node>)) {
      if (!/^[45]/.test(status)) continue;
      for (const { code, text } of errorCodes(answer.description)) if (!seen.has(code)) seen.set(code, `<li><b>${escape(status)} ${code}</b>${brief(text)}</li>`);
    }
  }
  const envelope = doc.components?.schemas?.ErrorResponse ? ' in the envelope <a href="#schema-ErrorResponse">ErrorResponse</a>' : '';
  const list = [...seen.entries()].sort(([, a], [, b]) => a.localeCompare(b)).map(([, item]) => item);
  return `<section class="tag" id="errors"><h2>Errors</h2><p>Every error answers its status with a code${envelope}; each operation lists the ones it may give.</p><ul class="answers">${list.join('')}</ul></section>`;
}

function operation(doc: Node, entry: Entry): string {
  const { op } = entry;
  const where = entry.webhook
    ? `${methodBadge(entry.method)} to each subscribed endpoint's URL`
    : `${methodBadge(entry.method)} <code class="path">${escape(entry.path)}</code>`;
  const open = op.security?.length === 0 && !entry.webhook ? '<p class="notes">No credential needed.</p>' : '';
  return (
    `<section class="op" id="${escape(entry.id)}">` +
    `<h3>${escape(op.summary ?? entry.path)}</h3>` +
    `<p class="endpoint">${where}</p>` +
    markdown(op.description) +
    open +
    parametersBlock(doc, op, entry.webhook ? 'Headers' : 'Parameters') +
    bodyBlock(op) +
    responsesBlock(op) +
    '</section>'
  );
}

/** The page's tags in the document's order, each with its operations (webhooks under their own tag). */
function byTag(doc: Node): { name: string; description?: string; entries: Entry[] }[] {
  const all = entries(doc);
  const tags = ((doc.tags ?? []) as Node[]).map((t) => ({ name: t.name as string, description: t.description as string | undefined, entries: [] as Entry[] }));
  const other = { name: 'Other', description: undefined, entries: [] as Entry[] };
  for (const entry of all) (tags.find((t) => t.name === entry.op.tags?.[0]) ?? other).entries.push(entry);
  return [...tags, other].filter((t) => t.entries.length > 0);
}

function contents(tags: ReturnType<typeof byTag>, schemas: string[]): string {
  const items = tags.map(
    (tag) =>
      `<li><a href="#${tagAnchor(tag.name)}">${escape(tag.name)}</a><ul class="ops">` +
      tag.entries.map((e) => `<li><a href="#${escape(e.id)}">${escape(e.op.summary ?? e.path)}</a></li>`).join('') +
      '</ul></li>',
  );
  items.push('<li><a href="#errors">Errors</a></li>');
  items.push(`<li><a href="#schemas">Schemas</a><ul class="ops">${schemas.map((s) => `<li><a href="#${schemaAnchor(s)}">${escape(s)}</a></li>`).join('')}</ul></li>`);
  return `<nav aria-label="Contents"><h2 class="toc">Contents</h2><ul>${items.join('')}</ul></nav>`;
}

/** The whole page, from the OpenAPI document. */
export function referencePage(doc: Node): string {
  const info = (doc.info ?? {}) as Node;
  const tags = byTag(doc);
  const schemas = Object.entries((doc.components?.schemas ?? {}) as Record<string, Node>);
  const sections = tags.map(
    (tag) =>
      `<section class="tag" id="${tagAnchor(tag.name)}"><h2>${escape(tag.name)}</h2>${markdown(tag.description)}` +
      tag.entries.map((e) => operation(doc, e)).join('') +
      '</section>',
  );
  const components = schemas.map(([name, schema]) => `<section class="op schema" id="${schemaAnchor(name)}"><h3>${escape(name)}</h3>${schemaBlock(schema)}</section>`);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(info.title ?? 'API')} reference</title>
<meta name="description" content="Every operation, webhook and schema of ${escape(info.title ?? 'the API')}">
<link rel="icon" href="data:,">
<style>${REFERENCE_CSS}</style>
<script src="/docs/reference.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to the reference</a>
<header>
<h1>${escape(info.title ?? 'API')} reference <span class="version">${escape(String(info.version ?? ''))}</span></h1>
${markdown(info.description)}
<p>The OpenAPI document itself: <a href="/openapi.json">/openapi.json</a>. Your browser's find (Ctrl-F) searches the whole page.</p>
<form id="search" role="search" class="off"><label for="filter">Filter operations</label> <input id="filter" type="search" autocomplete="off" spellcheck="false"> <span id="matches" role="status"></span></form>
</header>
<div class="layout">
${contents(tags, schemas.map(([name]) => name))}
<main id="main">
${sections.join('\n')}
${errorsSection(doc)}
<section class="tag" id="schemas"><h2>Schemas</h2><p>The objects that operations and webhooks take and answer, by name.</p>${components.join('\n')}</section>
</main>
</div>
</body>
</html>
`;
}
