/**
 * The value of one sample of a Prometheus text exposition, e.g.
 * `sample(text, 'svc_webhook_attempts_total', { outcome: 'success' })`; undefined when absent.
 * Labels must match exactly (all of them, in any order).
 */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    const wanted = Object.entries(labels);
    if (Object.keys(found).length === wanted.length && wanted.every(([k, v]) => found[k] === v)) return Number(match[3]);
  }
  return undefined;
}

/** Every label set of a metric's samples, as objects. */
export function labelSets(text: string, name: string): Record<string, string>[] {
  return text
    .split('\n')
    .map((line) => new RegExp(`^${name}\\{(.*)\\} `).exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Object.fromEntries([...m[1].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]])));
}
