import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { CompressedBody } from '../../http/compressed.js';
import { notFound } from '../../http/errors.js';
import { referencePage, STYLE_HASH } from './reference.js';
import { REFERENCE_SCRIPT } from './reference-assets.js';

/** The project's guides (docs/*.md), which the document's descriptions link to. */
export const GUIDES_DIR = fileURLToPath(new URL('../../../docs/', import.meta.url));

/** The reference page's own paths, outside the OpenAPI document. */
export const DOCS_PATHS = ['/docs', '/docs/reference.js', '/docs/guides/:name'];

/** Only this service's own origin: the page's own script, its one style element (by hash), no forms. */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  `style-src ${STYLE_HASH}`,
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The guides' file names; none where the service runs without its docs folder. */
function guideNames(): string[] {
  try {
    return readdirSync(GUIDES_DIR).filter((name) => name.endsWith('.md'));
  } catch {
    return [];
  }
}

/**
 * `GET /docs`: the API reference, HTML written from the OpenAPI document when first asked for (the
 * routes are all registered by then) and kept, sent compressed; its filter script beside it.
 */
export function registerDocs(app: FastifyInstance): void {
  const page = { schema: { hide: true } };
  let html: CompressedBody | null = null;
  const script = new CompressedBody(REFERENCE_SCRIPT);
  const cached = (type: string) => ({ 'cache-control': 'public, max-age=3600', 'content-type': type });

  app.get('/docs', page, async (request, reply) => {
    html ??= new CompressedBody(referencePage(app.swagger() as Record<string, unknown>));
    return html.send(request, reply.header('content-security-policy', CSP).header('cache-control', 'no-cache').type('text/html; charset=utf-8'));
  });
  app.get('/docs/reference.js', page, async (request, reply) => script.send(request, reply.headers(cached('application/javascript; charset=utf-8'))));

  // The guides as plain text, by exact file name: nothing outside docs/*.md can be named.
  let guides: Map<string, CompressedBody> | null = null;
  app.get<{ Params: { name: string } }>('/docs/guides/:name', page, async (request, reply) => {
    guides ??= new Map(guideNames().map((name) => [name, new CompressedBody(readFileSync(join(GUIDES_DIR, name)))]));
    const guide = guides.get(request.params.name);
    if (!guide) throw notFound('guide');
    return guide.send(request, reply.header('content-security-policy', CSP).headers(cached('text/plain; charset=utf-8')));
  });
}
