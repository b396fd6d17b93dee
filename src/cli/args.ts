import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A wrong command line: the command says what is wrong, and exits with status 2. */
export class UsageError extends Error {}

/** A command that cannot do what it was asked (e.g. an id that does not exist): one line, status 1. */
export class CliError extends Error {}

type Options = NonNullable<ParseArgsConfig['options']>;

/** Options people try that are settings of the service, with the environment variable each one is. */
const SETTINGS: Record<string, string> = {
  port: 'PORT',
  host: 'HOST',
  'data-dir': 'SVC_DATA_DIR',
  'public-url': 'SVC_PUBLIC_URL',
  'log-level': 'LOG_LEVEL',
  workers: 'SVC_WORKERS',
  'metrics-port': 'SVC_METRICS_PORT',
  'database-url': 'DATABASE_URL',
  'redis-url': 'REDIS_URL',
};

/** Settings whose value is not repeated in a message: it may hold a password. */
const SECRET = new Set(['DATABASE_URL', 'REDIS_URL']);

/**
 * `svc serve --port 4000`: the way to say it (PORT=4000 svc serve), or null when the unknown option
 * is no setting. Under `npm start`, the example is `PORT=4000 npm start`.
 */
function settingHint(error: Error, argv: string[], command: string): string | null {
  const flag = /Unknown option '--([^'=]+)'/.exec(error.message)?.[1];
  const name = flag === undefined ? undefined : SETTINGS[flag];
  if (!name) return null;
  const at = argv.findIndex((arg) => arg === `--${flag}` || arg.startsWith(`--${flag}=`));
  const given = argv[at]?.includes('=') ? argv[at].slice(flag!.length + 3) : argv[at + 1];
  const value = given !== undefined && !SECRET.has(name) && /^[\w.:/@+-]+$/.test(given) && !given.startsWith('-') ? given : 'VALUE';
  const run = process.env.npm_lifecycle_event === 'start' ? 'npm start' : `svc ${command}`;
  return `--${flag} is not an option of svc ${command}: the service takes its settings from the environment, so set ${name} instead: ${name}=${value} ${run} (README.md's configuration table lists them all)`;
}

/**
 * Parses a command's flags, with --help and --json everywhere; unknown flags are a usage error. A
 * command that runs on the service's settings names itself (`command`), so that an option that is a
 * setting (--port) is answered with the variable to set.
 */
export function parseFlags<O extends Options>(argv: string[], options: O, command?: string) {
  try {
    return parseArgs({
      args: argv,
      options: { ...options, help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' } },
      allowPositionals: false,
      strict: true,
    }).values;
  } catch (error) {
    const hint = command && (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? settingHint(error as Error, argv, command) : null;
    throw new UsageError(hint ?? (error as Error).message);
  }
}

export function required(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

/**
 * Prints the result as JSON with --json, else as `key: value` lines; a list (`{data: [...]}`) as a
 * table with a header line.
 */
export function output(json: boolean | undefined, result: Record<string, unknown>): void {
  if (json) {
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    return;
  }
  if (Array.isArray(result.data)) return printTable(result.data as Record<string, unknown>[]);
  for (const [key, value] of Object.entries(result)) {
    process.stdout.write(`${key}: ${typeof value === 'object' ? JSON.stringify(value) : value}\n`);
  }
}

function printTable(rows: Record<string, unknown>[]): void {
  if (rows.length === 0) return void process.stdout.write('(none)\n');
  const columns = Object.keys(rows[0]);
  const cells = [columns, ...rows.map((row) => columns.map((c) => (row[c] === null ? '-' : String(row[c]))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i].length)));
  for (const line of cells) process.stdout.write(line.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd() + '\n');
}
