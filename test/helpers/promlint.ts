/**
 * The checks `promtool check metrics` makes on a text exposition (Prometheus's promlint rules, read
 * from client_golang's testutil/promlint and written here for a test): the text must parse into
 * families, each with HELP and TYPE once; then each family is linted by name, type and labels.
 * Answers one `name: problem` line per problem, sorted as promtool prints them.
 */

const BASE_UNITS: Record<string, string> = {
  amperes: 'amperes', bytes: 'bytes', celsius: 'celsius', grams: 'grams', joules: 'joules', kelvin: 'kelvin',
  meters: 'meters', metres: 'metres', seconds: 'seconds', volts: 'volts',
  minutes: 'seconds', hours: 'seconds', days: 'seconds', weeks: 'seconds', kelvins: 'kelvin', fahrenheit: 'celsius',
  rankine: 'celsius', inches: 'meters', yards: 'meters', miles: 'meters', bits: 'bytes', calories: 'joules',
  pounds: 'grams', ounces: 'grams',
};
const UNIT_PREFIXES = ['', 'pico', 'nano', 'micro', 'milli', 'centi', 'deci', 'deca', 'hecto', 'kilo', 'kibi', 'mega', 'mibi', 'giga', 'gibi', 'tera', 'tebi', 'peta', 'pebi'];
const UNIT_ABBREVIATIONS = ['s', 'ms', 'us', 'ns', 'sec', 'b', 'kb', 'mb', 'gb', 'tb', 'pb', 'm', 'h', 'd'];
const TYPES = ['counter', 'gauge', 'summary', 'untyped', 'histogram', 'gaugehistogram'] as const;
/** The samples a family of each type may write, as suffixes of its name. */
const SUFFIXES: Record<string, string[]> = { histogram: ['_bucket', '_sum', '_count'], summary: ['', '_sum', '_count'] };

interface Family {
  name: string;
  type: string;
  help: string | null;
  labels: Set<string>;
}

/** A value Go's ParseFloat reads: a number, or Inf, Infinity and NaN in any case (prom-client writes `Nan`). */
const isFloat = (value: string) => /^[+-]?(inf|infinity)$/i.test(value) || /^nan$/i.test(value) || (value.trim() !== '' && !Number.isNaN(Number(value)));

/** Parses the exposition as promtool's text parser would; a format error is thrown. */
function families(text: string): Family[] {
  const found = new Map<string, Family>();
  const family = (name: string) => {
    let f = found.get(name);
    if (!f) found.set(name, (f = { name, type: 'untyped', help: null, labels: new Set() }));
    return f;
  };
  const typed = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) ?(.*)$/.exec(line);
    if (meta) {
      const f = family(meta[2]);
      if (meta[1] === 'HELP') {
        if (f.help !== null) throw new Error(`second HELP line for metric name "${f.name}"`);
        f.help = meta[3];
      } else {
        if (typed.has(f.name)) throw new Error(`second TYPE line for metric name "${f.name}"`);
        if (!(TYPES as readonly string[]).includes(meta[3])) throw new Error(`unknown metric type "${meta[3]}"`);
        typed.add(f.name);
        f.type = meta[3];
      }
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: -?\d+)?$/.exec(line);
    if (!sample || !isFloat(sample[3])) throw new Error(`cannot parse sample "${line}"`);
    const owner = [...found.values()].find((f) => (SUFFIXES[f.type] ?? ['']).some((s) => f.name + s === sample[1]));
    const f = owner ?? family(sample[1]);
    for (const [, label] of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g)) f.labels.add(label);
  }
  return [...found.values()];
}

function lint(f: Family): string[] {
  const problems: string[] = [];
  const lower = f.name.toLowerCase();
  const has = (word: string) => lower.includes(`_${word}_`) || lower.endsWith(`_${word}`);
  if (f.help === null) problems.push('no help text');
  const words = f.name.split('_');
  for (const [unit, base] of Object.entries(BASE_UNITS)) {
    const used = UNIT_PREFIXES.map((p) => p + unit).find((u) => words.includes(u));
    if (used && used !== base) problems.push(`use base unit "${base}" instead of "${used}"`);
  }
  const total = f.name.endsWith('_total');
  if (f.type === 'counter' && !total) problems.push('counter metrics should have "_total" suffix');
  if (f.type !== 'untyped' && f.type !== 'counter' && total) problems.push('non-counter metrics should not have "_total" suffix');
  if (f.type !== 'untyped') {
    const histogram = f.type === 'histogram';
    const summary = f.type === 'summary';
    if (!histogram && f.name.endsWith('_bucket')) problems.push('non-histogram metrics should not have "_bucket" suffix');
    if (!histogram && !summary && f.name.endsWith('_count')) problems.push('non-histogram and non-summary metrics should not have "_count" suffix');
    if (!histogram && !summary && f.name.endsWith('_sum')) problems.push('non-histogram and non-summary metrics should not have "_sum" suffix');
    if (!histogram && f.labels.has('le')) problems.push('non-histogram metrics should not have "le" label');
    if (!summary && f.labels.has('quantile')) problems.push('non-summary metrics should not have "quantile" label');
  }
  for (const type of ['counter', 'gauge', 'summary', 'histogram', 'gauge_histogram']) {
    if (has(type)) problems.push(`metric name should not include type '${type}'`);
  }
  if (f.name.includes(':')) problems.push("metric names should not contain ':'");
  if (/[a-z][A-Z]/.test(f.name)) problems.push("metric names should be written in 'snake_case' not 'camelCase'");
  if ([...f.labels].some((l) => /[a-z][A-Z]/.test(l))) problems.push("label names should be written in 'snake_case' not 'camelCase'");
  if (UNIT_ABBREVIATIONS.some(has)) problems.push('metric names should not contain abbreviated units');
  return problems.map((p) => `${f.name}: ${p}`);
}

/** What `promtool check metrics` would report on `text`: [] when it passes. */
export function promlint(text: string): string[] {
  return families(text).flatMap(lint).sort();
}
