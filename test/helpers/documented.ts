import type { App } from '../../src/server/app.js';

type Doc = { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
type Template = { pattern: RegExp; params: number; statuses: Map<string, string[]> };

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The document's path templates as patterns, fewest parameters first (a static segment wins, as in the router). */
function templates(doc: Doc): Template[] {
  return Object.entries(doc.paths)
    .map(([template, ops]) => ({
      pattern: new RegExp(`^${template.split(/\{[^}]+\}/).map(escape).join('[^/]+')}/?$`),
      params: template.split('{').length - 1,
      statuses: new Map(Object.entries(ops).map(([method, op]) => [method.toUpperCase(), Object.keys(op.responses)])),
    }))
    .sort((a, b) => a.params - b.params);
}

/**
 * A look-up of the statuses the document declares for the operation a request reaches; it gives
 * null when no operation matches (an unknown route, a HEAD request, an undocumented page such as /docs).
 */
export function declaredStatuses(doc: object): (method: string, url: string) => string[] | null {
  const list = templates(doc as Doc);
  return (method, url) => {
    const path = url.split('?')[0];
    for (const template of list) {
      const statuses = template.statuses.get(method.toUpperCase());
      if (statuses && template.pattern.test(path)) return statuses;
    }
    return null;
  };
}

/**
 * A check that an answer's status is one the OpenAPI document declares for its operation. The test
 * helpers run it on every call, so a route that gives an error it does not declare (a
 * `config.errors` entry forgotten) fails the test that provokes it.
 */
export function documentedStatusCheck(app: App): (method: string, url: string, status: number) => void {
  let declared: ReturnType<typeof declaredStatuses> | null = null;
  return (method, url, status) => {
    declared ??= declaredStatuses(app.swagger());
    const statuses = declared(method, url);
    if (statuses && !statuses.includes(String(status))) {
      throw new Error(`${method} ${url} answered ${status}, which its OpenAPI operation does not declare (it declares ${statuses.join(', ')})`);
    }
  };
}
