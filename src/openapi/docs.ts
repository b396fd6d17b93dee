import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { CompressedBody } from '../http/compressed.js';
import { notFound } from '../http/errors.js';

/** Swagger UI's browser build, from the `swagger-ui-dist` package: served by the service, no CDN. */
const SWAGGER_UI = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The project's guides (docs/*.md), which the document's descriptions link to. */
export const GUIDES_DIR = fileURLToPath(new URL('../../docs/', import.meta.url));

/** The reference page's own paths, outside the OpenAPI document. */
export const DOCS_PATHS = ['/docs', '/docs/swagger-ui.css', '/docs/swagger-ui-bundle.js', '/docs/reference.js', '/docs/guides/:name'];

/**
 * Only this service's own origin. Swagger UI sets style attributes (hence 'unsafe-inline' for
 * styles), draws its icons as data: images, and "Try it out" calls this origin only.
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

// The document is asked for at once, in parallel with the renderer, rather than after it has run.
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>svc API reference</title>
<link rel="icon" href="data:,">
<link rel="preload" href="/openapi.json" as="fetch" crossorigin="anonymous">
<link rel="stylesheet" href="/docs/swagger-ui.css">
<style>body { margin: 0; background: #fafafa; }</style>
</head>
<body>
<noscript>The reference needs JavaScript; the OpenAPI document itself is at <a href="/openapi.json">/openapi.json</a>.</noscript>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js" defer></script>
<script src="/docs/reference.js" defer></script>
</body>
</html>
`;

/**
 * Swagger UI's settings: operations listed by tag and opened on demand (a phone renders a few
 * thousand nodes, not every operation at once), links to each operation, a filter by tag, no
 * calls to a validator elsewhere.
 */
const SETTINGS = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  docExpansion: 'list',
  defaultModelsExpandDepth: 0,
  filter: true,
  displayRequestDuration: true,
  validatorUrl: null,
});
`;

/** The guides' file names; none where the service runs without its docs folder. */
function guideNames(): string[] {
  try {
    return readdirSync(GUIDES_DIR).filter((name) => name.endsWith('.md'));
  } catch {
    return [];
  }
}

function asset(file: string): CompressedBody {
  return new CompressedBody(readFileSync(join(SWAGGER_UI, file)));
}

/** `GET /docs`: the OpenAPI document rendered by Swagger UI, every asset from this service, compressed. */
export function registerDocs(app: FastifyInstance): void {
  const page = { schema: { hide: true } };
  const html = new CompressedBody(PAGE);
  const script = new CompressedBody(SETTINGS);
  let bundle: CompressedBody | null = null;
  let css: CompressedBody | null = null;
  const cached = (type: string) => ({ 'cache-control': 'public, max-age=3600', 'content-type': type });

  app.get('/docs', page, async (request, reply) =>
    html.send(request, reply.header('content-security-policy', CSP).header('cache-control', 'no-cache').type('text/html; charset=utf-8')),
  );
  app.get('/docs/swagger-ui-bundle.js', page, async (request, reply) =>
    (bundle ??= asset('swagger-ui-bundle.js')).send(request, reply.headers(cached('application/javascript; charset=utf-8'))),
  );
  app.get('/docs/swagger-ui.css', page, async (request, reply) => (css ??= asset('swagger-ui.css')).send(request, reply.headers(cached('text/css; charset=utf-8'))));
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
