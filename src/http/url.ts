import { validation } from './errors.js';

/**
 * Checks the raw request URL before routing: PostgreSQL cannot store NUL, so `%00` is refused
 * anywhere; and a query string whose percent-encoding is not UTF-8 is refused rather than handed on
 * half-decoded (the query parser keeps such values as raw text). An invalid path is the router's
 * FST_ERR_BAD_URL, answered in error-handler.ts.
 */
export function checkRequestUrl(url: string): void {
  // Both checks are about percent-encoding: a URL without `%` passes them (most requests).
  if (!url.includes('%')) return;
  if (/%00/.test(url)) throw validation('The URL must not contain NUL characters.');
  const query = url.indexOf('?');
  if (query < 0) return;
  for (const part of url.slice(query + 1).split('&')) {
    try {
      decodeURIComponent(part.replace(/\+/g, ' '));
    } catch {
      throw validation('The query string is not valid: its percent-encoding must be UTF-8.', [{ path: 'query', message: 'invalid percent-encoding' }]);
    }
  }
}
