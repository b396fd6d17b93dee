import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The layers of src/ (docs/architecture.md), top first: a folder imports its own files and the
 * layers below it, never one above, and the folders of one layer do not import each other.
 */
const LAYERS = [
  ['cli'],
  ['server'],
  ['account', 'api-keys', 'products', 'orders', 'events', 'webhooks', 'notifications'],
  ['engine', 'http'],
  ['db', 'ops'],
  ['lib'],
];

const layerOf = new Map(LAYERS.flatMap((folders, index) => folders.map((folder) => [folder, index] as const)));

/**
 * The engine's parts, top first (docs/delivery.md): a write's outbox hands deliveries to the
 * delivery engine, which sends through destinations; the engine is given the outbox to write an
 * event of its own rather than import it.
 */
const ENGINE = [['outbox'], ['delivery'], ['destinations', 'log']];

const engineLayerOf = new Map(ENGINE.flatMap((parts, index) => parts.map((part) => [part, index] as const)));

const files = readdirSync('src', { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));

/** Each relative import of a file: the folder of src/ it lands in. */
function imports(file: string): { target: string; folder: string }[] {
  const text = readFileSync(join('src', file), 'utf8');
  return [...text.matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)].map((m) => {
    const target = normalize(join(dirname(file), m[1]));
    return { target, folder: target.split('/')[0] };
  });
}

describe('layers of src/', () => {
  it('places every file in a folder of a layer', () => {
    expect(files.length).toBeGreaterThan(100);
    const unplaced = files.filter((f) => !layerOf.has(f.split('/')[0]));
    expect(unplaced).toEqual([]);
  });

  it('has every import point down, never up or sideways', () => {
    const wrong: string[] = [];
    for (const file of files) {
      const folder = file.split('/')[0];
      for (const { target, folder: to } of imports(file)) {
        if (to === folder || relative('src', join('src', target)).startsWith('..')) continue;
        if (!(layerOf.get(to)! > layerOf.get(folder)!)) wrong.push(`${file} -> ${target}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('has the engine\'s parts import one way: outbox, delivery, then destinations and the log', () => {
    const inParts = files.filter((f) => f.startsWith('engine/') && f.split('/').length > 2);
    expect([...new Set(inParts.map((f) => f.split('/')[1]))].sort()).toEqual(ENGINE.flat().sort());
    const wrong: string[] = [];
    for (const file of inParts) {
      const part = file.split('/')[1];
      for (const { target } of imports(file)) {
        const [folder, to] = target.split('/');
        if (folder !== 'engine' || to === part || !engineLayerOf.has(to)) continue;
        if (!(engineLayerOf.get(to)! > engineLayerOf.get(part)!)) wrong.push(`${file} -> ${target}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
