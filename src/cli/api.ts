import { CliError } from './args.js';
import { authHeaders, unreachableReason, type Connection } from './connection.js';

/** One request a command made, as it reports it. */
export interface Made {
  method: string;
  path: string;
  status: number;
  id: string | null;
}

/**
 * The service's API as a command line calls it: JSON in and out, an error answer or an unreachable
 * service as one CliError line, and a record of every request made.
 */
export class Api {
  readonly made: Made[] = [];

  constructor(readonly connection: Connection) {}

  async call<T = Record<string, any>>(method: string, path: string, body?: unknown): Promise<T> {
    let response: Response;
    try {
      response = await fetch(this.connection.baseUrl + path, {
        method,
        headers: { ...authHeaders(this.connection), accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (error) {
      throw new CliError(`cannot reach ${this.connection.baseUrl} (${unreachableReason(error)}): start the service (svc serve), or point --base-url or SVC_BASE_URL at it`);
    }
    const text = await response.text();
    const json = parse(text);
    if (!response.ok) {
      const error = (json as { error?: { code?: string; message?: string } } | null)?.error;
      throw new CliError(`${method} ${path} answered ${response.status}${error ? ` ${error.code}: ${error.message}` : ''}`);
    }
    const id = typeof (json as { id?: unknown } | null)?.id === 'string' ? (json as { id: string }).id : null;
    this.made.push({ method, path, status: response.status, id });
    return json as T;
  }
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
