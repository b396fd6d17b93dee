import { DatabaseUnavailableError } from './db.js';

/** Node's own error codes (EPIPE, ECONNRESET, ...) and postgres.js's (CONNECT_TIMEOUT, CONNECTION_CLOSED). */
const CLIENT_CODE = /^(E[A-Z]+|CONNECT\w*)$/;

/** A SQLSTATE, the server's answer; no class begins with E, so EPIPE or EPERM are the client's. */
function sqlState(code: unknown): code is string {
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !CLIENT_CODE.test(code);
}

/**
 * SQLSTATEs that mean the database did not answer rather than refused a statement: connection
 * failures (class 08 but 08P01, a protocol violation), the server shutting down or starting
 * (57P01-57P03), too many connections (53300) and a statement cancelled by its time-out (57014).
 */
function unavailableState(code: string): boolean {
  return (code.startsWith('08') && code !== '08P01') || /^57P0[123]$/.test(code) || code === '53300' || code === '57014';
}

/**
 * The driver's error as the service's: DatabaseUnavailableError when the database did not answer
 * (the codes above, and the client's own network errors, which carry no SQLSTATE: ECONNREFUSED,
 * CONNECTION_CLOSED, CONNECT_TIMEOUT, ...); any other error as it is, with node's
 * usual field names (`constraint`, `table`, ...), which callers read.
 */
export function driverError(error: unknown): unknown {
  const e = error as Record<string, unknown> | null;
  if (!e || typeof e !== 'object') return error;
  const code = typeof e.code === 'string' ? e.code : '';
  if (sqlState(code)) {
    if (unavailableState(code)) return new DatabaseUnavailableError(String(e.message ?? code), error);
    e.constraint ??= e.constraint_name;
    e.table ??= e.table_name;
    e.column ??= e.column_name;
    return error;
  }
  if (CLIENT_CODE.test(code)) {
    return new DatabaseUnavailableError(code || String(e.message), error);
  }
  return error;
}

/** An error the server answered with (a SQLSTATE) on a connection that still works. */
export function refusedByServer(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return sqlState(code) && !unavailableState(code);
}

/** The connection itself failed (lost, reset, or silent past the time-out), as opposed to a statement the server refused. */
export function connectionLost(error: unknown): boolean {
  if (!(error instanceof DatabaseUnavailableError)) return false;
  const code = (error.original as { code?: unknown } | null)?.code;
  return !sqlState(code) || (code.startsWith('08') && code !== '08P01');
}

/**
 * The database itself is down or out of reach, as opposed to a statement it refused or cancelled:
 * a connection refused, reset, lost or timed out, too many clients, the server shutting down.
 */
export function databaseDown(error: unknown): boolean {
  if (!(error instanceof DatabaseUnavailableError) || error.original === null) return false;
  const code = (error.original as { code?: unknown } | null)?.code;
  return code !== '57014';
}

/** Codes a connection fails with only while it opens: refused, unreachable, timed out, too many clients, the server starting. */
const CONNECT_CODES = new Set(['ECONNREFUSED', 'CONNECT_TIMEOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', '53300', '57P03']);

/** A connection could not be opened (as opposed to an open one lost). */
export function connectFailed(error: unknown): boolean {
  if (!(error instanceof DatabaseUnavailableError)) return false;
  const code = (error.original as { code?: unknown } | null)?.code;
  return typeof code === 'string' && CONNECT_CODES.has(code);
}

/** The server refused a connection for having too many clients already (53300). */
export function serverFull(error: unknown): boolean {
  return error instanceof DatabaseUnavailableError && (error.original as { code?: unknown } | null)?.code === '53300';
}
