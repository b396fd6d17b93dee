import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../http/errors.js';

/** Where `npm run build` puts the dashboard (dashboard/dist, from the package root). */
export const DASHBOARD_DIST = fileURLToPath(new URL('../../dashboard/dist/', import.meta.url));

/** The dashboard's routes, outside /v1 and outside the OpenAPI document. */
export const DASHBOARD_PATHS = ['/dashboard', '/dashboard/*'];

/**
 * Only this origin: scripts and styles are files of the build (no inline script or style element),
 * images may also be data: URIs (the stylesheet draws its icons that way). No frames, no plugins,
 * no <base>, forms post here only.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'application/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

interface File {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
  etag: string;
}

/** Compressing text pays for itself; images and fonts are compressed already. */
const COMPRESSIBLE = new Set(['.html', '.js', '.css', '.svg', '.json', '.txt']);

function load(path: string): File {
  const body = readFileSync(path);
  const ext = extname(path);
  return {
    body,
    gzip: COMPRESSIBLE.has(ext) && body.length > 1024 ? gzipSync(body) : null,
    type: TYPES[ext] ?? 'application/octet-stream',
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
  };
}

/**
 * `GET /dashboard/...`: the built single-page application. Hashed files under assets/ are cached
 * for a year (their name changes with their content); index.html is revalidated on every load, so
 * a new build is picked up at once. Any other path is a page of the application: it gets index.html
 * and the browser's router shows it. Files are read once and kept, with their gzip.
 */
export function registerDashboard(app: FastifyInstance, dist = DASHBOARD_DIST): void {
  const files = new Map<string, File | null>();

  const file = (relative: string): File | null => {
    if (files.has(relative)) return files.get(relative)!;
    const path = normalize(join(dist, relative));
    let found: File | null = null;
    if (path.startsWith(dist) && !path.includes(`${sep}..${sep}`)) {
      try {
        if (statSync(path).isFile()) found = load(path);
      } catch {
        found = null;
      }
    }
    // Only what exists is kept: a build made while the service runs is found on the next request.
    if (found) files.set(relative, found);
    return found;
  };

  const send = (request: FastifyRequest, reply: FastifyReply, found: File, cache: string) => {
    reply
      .header('content-security-policy', DASHBOARD_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', cache)
      .header('etag', found.etag)
      .header('vary', 'accept-encoding')
      .type(found.type);
    if (request.headers['if-none-match'] === found.etag) return reply.status(304).send();
    if (found.gzip && /\bgzip\b/.test(String(request.headers['accept-encoding'] ?? ''))) {
      return reply.header('content-encoding', 'gzip').send(found.gzip);
    }
    return reply.send(found.body);
  };

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const rest = (request.params as { '*'?: string })['*'] ?? '';
    if (rest.startsWith('assets/')) {
      const asset = /^assets\/[\w.-]+$/.test(rest) ? file(rest) : null;
      if (!asset) throw new ApiError('NOT_FOUND', 'No such dashboard asset: reload the page (the dashboard may have been rebuilt).');
      return send(request, reply, asset, 'public, max-age=31536000, immutable');
    }
    // The service worker keeps its fixed name (a browser registers it by URL) and is revalidated like index.html.
    if (rest === 'sw.js') {
      const worker = file(rest);
      if (worker) return send(request, reply, worker, 'no-cache');
    }
    if (/^[\w-]+\.(?:svg|png|ico|txt)$/.test(rest)) {
      const root = file(rest);
      if (root) return send(request, reply, root, 'public, max-age=3600');
    }
    const index = file('index.html');
    if (!index) throw new ApiError('NOT_FOUND', 'The dashboard is not built: run npm run build, then reload.');
    return send(request, reply, index, 'no-cache');
  };

  const options = { schema: { hide: true } };
  app.get('/dashboard', options, handler);
  app.get('/dashboard/*', options, handler);
}
