import { ConfigError } from '../lib/config.js';
import { DatabaseUnavailableError } from '../db/db.js';
import { DataDirInUseError } from '../db/embedded/lock.js';
import { CliError, UsageError } from './args.js';

/** How a command failed, as one line for a person, and its exit status. */
export interface Failure {
  message: string;
  /** 2 for a wrong command line or setting, 1 for anything else. */
  code: 1 | 2;
}

type ErrorLike = Error & {
  code?: string;
  detail?: string;
  constraint?: string;
  table?: string;
  address?: string;
  port?: number;
  syscall?: string;
};

/** What a table's rows are called in a sentence. */
const ENTITIES: Record<string, string> = {
  users: 'user',
  organizations: 'organization',
  workspaces: 'workspace',
  api_keys: 'API key',
  personal_access_tokens: 'personal access token',
  webhook_endpoints: 'webhook endpoint',
};

/** `Key (a, b)=(x, y) ...` of a PostgreSQL constraint error: the values, in order. */
function keyValues(detail: string | undefined): string[] {
  const match = /^Key \(([^)]*)\)=\((.*)\) /.exec(detail ?? '');
  return match ? match[2].split(', ') : [];
}

/** Unique constraints that a command line can run into, as sentences. */
const ALREADY_EXISTS: Record<string, (values: string[]) => string> = {
  users_email_key: ([email]) => `a user with the e-mail address ${email} already exists`,
  organizations_slug_key: ([slug]) => `an organization with the slug "${slug}" already exists`,
  workspaces_organization_id_slug_key: ([org, slug]) => `organization ${org} already has a workspace with the slug "${slug}"`,
};

/** Codes of a database that cannot be reached or refuses the connection, with what to say. */
const UNREACHABLE: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'no answer in time',
  CONNECT_TIMEOUT: 'no answer in time',
  CONNECTION_CLOSED: 'the server closed the connection',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  '28P01': 'password authentication failed',
  '28000': 'the server refused this user or address',
  '3D000': 'the database does not exist',
  '57P03': 'the server is starting up or shutting down',
  '08001': 'the connection could not be made',
  '08006': 'the connection failed',
};

/** Host and port of DATABASE_URL, never its user name or password. */
function databaseAddress(env: NodeJS.ProcessEnv): string {
  try {
    const url = new URL(env.DATABASE_URL ?? '');
    return `${url.hostname}:${url.port || '5432'}`;
  } catch {
    return 'DATABASE_URL';
  }
}

function listenFailure(error: ErrorLike): string | null {
  if (error.syscall !== 'listen') return null;
  const where = `${error.address ?? 'the address'}:${error.port ?? '?'}`;
  if (error.code === 'EADDRINUSE') return `${where} is already in use by another process; stop it, or set PORT (or SVC_METRICS_PORT) to a free port`;
  if (error.code === 'EACCES') return `not allowed to listen on ${where} (ports below 1024 need privileges); set PORT to a higher port`;
  if (error.code === 'EADDRNOTAVAIL') return `cannot listen on ${where}: this machine has no such address; check HOST`;
  return null;
}

/**
 * Turns whatever stopped a command into one line: no stack trace, no SQL, no credentials. Known
 * causes get a sentence that says what to do; anything else its message's first line.
 */
export function describeFailure(error: unknown, env: NodeJS.ProcessEnv = process.env): Failure {
  if (error instanceof UsageError || error instanceof ConfigError) return { message: error.message, code: 2 };
  if (error instanceof CliError || error instanceof DataDirInUseError) return { message: error.message, code: 1 };
  // The driver's own error says why the database did not answer.
  if (error instanceof DatabaseUnavailableError) return error.original ? describeFailure(error.original, env) : { message: error.message, code: 1 };
  const e = (error ?? {}) as ErrorLike;
  const listen = listenFailure(e);
  if (listen) return { message: listen, code: 1 };
  if (e.code === '23505') {
    const sentence = ALREADY_EXISTS[e.constraint ?? ''];
    const what = ENTITIES[e.table ?? ''] ?? 'row';
    return { message: sentence ? sentence(keyValues(e.detail)) : `a ${what} with the same values already exists`, code: 1 };
  }
  if (e.code === '23503') {
    // "Key (workspace_id)=(wsp_nope) is not present in table "workspaces"": the missing row.
    const table = /not present in table "([^"]+)"/.exec(e.detail ?? '')?.[1];
    const [value] = keyValues(e.detail);
    const what = ENTITIES[table ?? ''] ?? 'referenced row';
    return { message: value ? `there is no ${what} "${value}"` : `a ${what} it refers to does not exist`, code: 1 };
  }
  if (env.DATABASE_URL && e.code && e.code in UNREACHABLE) {
    return { message: `cannot use the database at ${databaseAddress(env)}: ${UNREACHABLE[e.code]}; check DATABASE_URL and that PostgreSQL is running`, code: 1 };
  }
  const first = (e.message || String(error)).split('\n')[0];
  return { message: first, code: 1 };
}
