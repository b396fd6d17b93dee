import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A wrong command line: the command says what is wrong, and exits with status 2. */
export class UsageError extends Error {}

/** A command that cannot do what it was asked (e.g. an id that does not exist): one line, status 1. */
export class CliError extends Error {}

type Options = NonNullable<ParseArgsConfig['options']>;

/** Parses a command's flags, with --help and --json everywhere; unknown flags are a usage error. */
export function parseFlags<O extends Options>(argv: string[], options: O) {
  try {
    return parseArgs({
      args: argv,
      options: { ...options, help: { type: 'boolean', short: 'h' }, json: { type: 'boolean' } },
      allowPositionals: false,
      strict: true,
    }).values;
  } catch (error) {
    throw new UsageError((error as Error).message);
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
