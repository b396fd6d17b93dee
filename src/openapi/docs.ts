import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { FastifyInstance } from 'fastify';

/** Redoc's self-contained browser bundle, from the `redoc` package: served by the service, no CDN. */
const REDOC_BUNDLE = createRequire(import.meta.url).resolve('redoc/bundles/redoc.standalone.js');

/**
 * Only this service's own origin. Redoc draws its sidebar credit from a CDN, which `img-src` keeps
 * from leaving the browser (the image is then left out); its styles are inline and its search
 * index runs in a worker made from a blob.
 */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>svc API reference</title>
<link rel="icon" href="data:,">
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<redoc spec-url="/openapi.json" required-props-first="true" sort-required-props-first="true"></redoc>
<script src="/docs/redoc.standalone.js"></script>
</body>
</html>
`;

/** `GET /docs`: the OpenAPI document rendered by Redoc, every asset from this service. */
export function registerDocs(app: FastifyInstance): void {
  let bundle: Buffer | null = null;
  const page = { schema: { hide: true } };

  app.get('/docs', page, async (_request, reply) =>
    reply.header('content-security-policy', CSP).header('cache-control', 'no-cache').type('text/html; charset=utf-8').send(PAGE),
  );

  app.get('/docs/redoc.standalone.js', page, async (_request, reply) => {
    bundle ??= readFileSync(REDOC_BUNDLE);
    return reply.header('cache-control', 'public, max-age=3600').type('application/javascript; charset=utf-8').send(bundle);
  });
}
