import { clearShared } from './cache';

/**
 * The signed-in session: its token lives in this tab's sessionStorage only (gone when the tab
 * closes), never in localStorage, a cookie or a URL; a new tab is handed it by an open one (handoff.ts). `link` sessions were minted by a one-time
 * sign-in link and are revoked on the server at sign-out; a pasted token is only forgotten.
 */
export interface Session {
  token: string;
  source: 'link' | 'token';
  user: { id: string; email: string; name: string } | null;
  expiresAt: string | null;
}

const KEY = 'svc.dashboard.session';

export function loadSession(): Session | null {
  try {
    const text = sessionStorage.getItem(KEY);
    return text ? (JSON.parse(text) as Session) : null;
  } catch {
    return null;
  }
}

/** A new session starts without what another one kept (cache.ts). */
export function saveSession(session: Session): void {
  clearShared();
  sessionStorage.setItem(KEY, JSON.stringify(session));
}

export function clearSession(): void {
  clearShared();
  sessionStorage.removeItem(KEY);
}

/** The workspace last chosen: an id, not a secret, so it is remembered across sessions. */
const WORKSPACE_KEY = 'svc.dashboard.workspace';

export const rememberedWorkspace = (): string | null => localStorage.getItem(WORKSPACE_KEY);
export const rememberWorkspace = (id: string): void => localStorage.setItem(WORKSPACE_KEY, id);
