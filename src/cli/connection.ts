import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { UsageError } from './args.js';

/** Where and as whom `svc listen` and `svc trigger` call a running service. */
export interface Connection {
  apiKey: string;
  baseUrl: string;
  /** The workspace of a personal access token (Service-Workspace-Id); null with an API key. */
  workspace: string | null;
}

export const DEFAULT_BASE_URL = 'http://127.0.0.1:3000';

/** The help lines of the flags every command that calls the service takes. */
export const CONNECTION_HELP = `  --api-key KEY     an API key or personal access token (default: SVC_API_KEY, else the demo
                    workspace's key in SVC_DATA_DIR/demo.json, which svc serve --demo writes)
  --base-url URL    the service (default: SVC_BASE_URL, else the demo's address, else ${DEFAULT_BASE_URL})
  --workspace WSP   the workspace, with a personal access token (Service-Workspace-Id)`;

export const CONNECTION_FLAGS = {
  'api-key': { type: 'string' },
  'base-url': { type: 'string' },
  workspace: { type: 'string' },
} as const;

/** The demo set `svc serve --demo` keeps in the data folder: its first workspace's key and its address. */
function demoCredentials(env: NodeJS.ProcessEnv): { apiKey: string; baseUrl: string | null } | null {
  const file = join(env.SVC_DATA_DIR || './data', 'demo.json');
  if (!existsSync(file)) return null;
  try {
    const demo = JSON.parse(readFileSync(file, 'utf8')) as { baseUrl?: string; workspaces?: { apiKey?: string }[] };
    const apiKey = demo.workspaces?.[0]?.apiKey;
    return apiKey ? { apiKey, baseUrl: demo.baseUrl ?? null } : null;
  } catch {
    return null;
  }
}

export function isHttpUrl(text: string): boolean {
  try {
    return /^https?:$/.test(new URL(text).protocol);
  } catch {
    return false;
  }
}

/** The connection from the flags, the environment and the demo set, in that order; a wrong one is a UsageError. */
export function connectionOf(flags: Record<string, unknown>, env: NodeJS.ProcessEnv): Connection {
  const text = (name: string) => (typeof flags[name] === 'string' && flags[name] !== '' ? (flags[name] as string) : null);
  const given = text('api-key') ?? env.SVC_API_KEY ?? null;
  const demo = given ? null : demoCredentials(env);
  const apiKey = given ?? demo?.apiKey;
  if (!apiKey) {
    throw new UsageError(`no credential: pass --api-key, set SVC_API_KEY, or start the service with svc serve --demo (its key is then read from ${join(env.SVC_DATA_DIR || './data', 'demo.json')})`);
  }
  const baseUrl = (text('base-url') ?? env.SVC_BASE_URL ?? demo?.baseUrl ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
  if (!isHttpUrl(baseUrl)) throw new UsageError(`--base-url must be an http:// or https:// URL, got "${baseUrl}"`);
  return { apiKey, baseUrl, workspace: text('workspace') };
}

/** The request headers of a connection. */
export function authHeaders(connection: Connection): Record<string, string> {
  return { authorization: `Bearer ${connection.apiKey}`, ...(connection.workspace ? { 'service-workspace-id': connection.workspace } : {}) };
}

/** Why a request did not reach the service, from fetch's error: `ECONNREFUSED`, `ENOTFOUND`, ... */
export function unreachableReason(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (error as Error)?.message ?? String(error);
}
