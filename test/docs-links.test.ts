import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The README and docs/*.md name only what is there: every repository path they mention exists, and
 * every link to another page lands on a file and, with `#anchor`, on one of its headings.
 */
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/**
 * A path from the repository's root, e.g. `src/http/list.ts` or `migrations/013`; not one of an
 * earlier commit (`git show 7230d65:docs/performance.md`), which the tree need not hold.
 */
const PATH = /(?<![\w./@:-])((?:src|test|docs|bench|scripts|migrations|sdk|dashboard)\/[\w./@-]*[\w/])/g;

/** Names that stand for any file of their kind, and what a build writes: not files of the tree. */
const NOT_FILES = [/^docs\/x\.md$/, /\/dist(\/|$)/];

/** npm workspaces: the README names some of their files from the workspace's own folder. */
const WORKSPACES = ['', 'dashboard/', 'sdk/'];

function exists(path: string): boolean {
  const clean = path.replace(/\.$/, '');
  if (WORKSPACES.some((w) => existsSync(join(ROOT, w, clean)))) return true;
  // A migration named by its number alone.
  const number = /^migrations\/(\d{3})$/.exec(clean);
  return number !== null && readdirSync(join(ROOT, 'migrations')).some((f) => f.startsWith(`${number[1]}_`));
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(page: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(join(ROOT, page), 'utf8').split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = !fenced && /^#{1,6} (.*)$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

describe('docs name what is there', () => {
  it('every repository path the README and docs/ mention exists', () => {
    const missing: string[] = [];
    for (const page of PAGES) {
      readFileSync(join(ROOT, page), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          for (const [, path] of line.matchAll(PATH)) {
            if (NOT_FILES.some((p) => p.test(path)) || exists(path)) continue;
            missing.push(`${page}:${i + 1}: ${path}`);
          }
        });
    }
    expect(missing).toEqual([]);
  });

  it('every link to a page of the repository lands on its file and heading', () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      readFileSync(join(ROOT, page), 'utf8')
        .split('\n')
        .forEach((line, i) => {
          for (const [, target] of line.matchAll(/\]\(([^)\s]+)\)/g)) {
            if (/^([a-z]+:|\/|<)/.test(target)) continue;
            const [file, anchor] = target.split('#');
            const linked = file ? normalize(join(dirname(page), file)) : page;
            if (!existsSync(join(ROOT, linked))) broken.push(`${page}:${i + 1}: ${target} (no such file)`);
            else if (anchor && linked.endsWith('.md') && !anchors(linked).has(anchor)) broken.push(`${page}:${i + 1}: ${target} (no such heading)`);
          }
        });
    }
    expect(broken).toEqual([]);
  });

  it('catches a path or heading that is not there', () => {
    expect(exists('src/db/lock.ts')).toBe(false);
    expect(exists('src/db/embedded/lock.ts')).toBe(true);
    expect(exists('migrations/013')).toBe(true);
    expect(exists('migrations/999')).toBe(false);
    expect(anchors('docs/api.md').has('errors')).toBe(true);
    expect(anchors('docs/performance.md').has('the-reference-page-docs')).toBe(true);
    expect(anchors('docs/delivery.md').has('direct-hand-off')).toBe(false);
  });
});
