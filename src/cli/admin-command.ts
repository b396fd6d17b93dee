import type { AppContext } from '../server/context.js';
import type { parseFlags } from './args.js';

/** One `svc admin` sub-command: its usage line, its flags and what it does. */
export interface AdminCommand {
  usage: string;
  /** What --help prints, when there is more to say than the usage line. */
  help?: string;
  flags: Parameters<typeof parseFlags>[1];
  /** Commands that need no database (master-key) leave this false. */
  needsDb?: boolean;
  /** Checks the flags before the database is opened, so a typo is reported without it. */
  check?(values: Record<string, string | boolean | undefined>): void;
  run(values: Record<string, string | boolean | undefined>, ctx: AppContext | null): Promise<Record<string, unknown>>;
  /** The text printed without --json, when `key: value` lines would not do (e.g. a value meant for a pipe). */
  text?(result: Record<string, unknown>): string;
}

export const str = { type: 'string' } as const;
export const bool = { type: 'boolean' } as const;

