import { parseArgs, type ParseArgsConfig } from 'node:util';

export class UsageError extends Error {}

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

/** Prints the result as JSON with --json, else as `key: value` lines. */
export function output(json: boolean | undefined, result: Record<string, unknown>): void {
  if (json) {
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    return;
  }
  for (const [key, value] of Object.entries(result)) {
    process.stdout.write(`${key}: ${typeof value === 'object' ? JSON.stringify(value) : value}\n`);
  }
}
