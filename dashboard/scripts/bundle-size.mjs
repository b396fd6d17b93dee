#!/usr/bin/env node
// Prints the size of what the browser loads for the first page (index.html and every script and
// stylesheet it names, modulepreloads included), raw and gzipped, and of the chunks loaded later
// (the chart). The target is under 250 KB gzipped for the first load; past it the build fails.
// With SVC_BUILD_QUIET set (npm start's build) it says something only when the build fails.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const dist = new URL('../dist/', import.meta.url).pathname;
const LIMIT_KB = 250;
const html = readFileSync(join(dist, 'index.html'), 'utf8');
const named = new Set([...html.matchAll(/(?:src|href)="\/dashboard\/(assets\/[^"]+)"/g)].map((m) => m[1]));
const kb = (bytes) => (bytes / 1024).toFixed(1);
const size = (file) => {
  const body = readFileSync(join(dist, file));
  return { raw: body.length, gzip: gzipSync(body, { level: 9 }).length };
};

const quiet = Boolean(process.env.SVC_BUILD_QUIET);
const log = (text) => (quiet ? undefined : console.log(text));
let first = size('index.html');
const lines = [];
for (const file of [...named].sort()) {
  const s = size(file);
  first = { raw: first.raw + s.raw, gzip: first.gzip + s.gzip };
  lines.push(`  ${file.padEnd(40)} ${kb(s.raw).padStart(8)} KB  ${kb(s.gzip).padStart(7)} KB gzipped`);
}
const later = readdirSync(join(dist, 'assets')).map((f) => `assets/${f}`).filter((f) => !named.has(f) && /\.(js|css)$/.test(f));
log(`dashboard first load: ${kb(first.raw)} KB, ${kb(first.gzip)} KB gzipped (target < ${LIMIT_KB} KB)`);
log(lines.join('\n'));
for (const file of later.sort()) {
  const s = size(file);
  log(`  later: ${file.padEnd(33)} ${kb(s.raw).padStart(8)} KB  ${kb(s.gzip).padStart(7)} KB gzipped`);
}
if (first.gzip / 1024 > LIMIT_KB) {
  console.error(`The dashboard's first load is over ${LIMIT_KB} KB gzipped.`);
  process.exit(1);
}
