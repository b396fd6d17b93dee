import type { Session } from './session';

/**
 * Tabs of one browser profile share a session over a BroadcastChannel (same origin only): a tab
 * opened without one (a typed address, a link opened in a new tab) asks the open tabs, and one that
 * is signed in answers with its session, which the new tab keeps in its own sessionStorage. Nothing
 * is written to disk beyond the tabs' session storage, so the session still ends with the last tab,
 * at sign-out, or when the token expires. Signing out in one tab signs out every tab of the session.
 */
const CHANNEL = 'svc.dashboard.session';

type Message = { kind: 'ask' } | { kind: 'session'; session: Session } | { kind: 'signed-out'; token: string };

const usable = (session: Session | null): session is Session => Boolean(session && (!session.expiresAt || Date.parse(session.expiresAt) > Date.now()));

function open(): BroadcastChannel | null {
  return typeof BroadcastChannel === 'function' ? new BroadcastChannel(CHANNEL) : null;
}

/** The session of another open tab, or null when none answers within `waitMs`. */
export function askOtherTabs(waitMs: number): Promise<Session | null> {
  const channel = open();
  if (!channel) return Promise.resolve(null);
  return new Promise((resolve) => {
    const done = (session: Session | null) => {
      clearTimeout(timer);
      channel.close();
      resolve(session);
    };
    const timer = setTimeout(() => done(null), waitMs);
    channel.onmessage = (event: MessageEvent<Message>) => {
      if (event.data.kind === 'session' && usable(event.data.session)) done(event.data.session);
    };
    channel.postMessage({ kind: 'ask' } satisfies Message);
  });
}

/**
 * While this tab runs: answers other tabs' asks with `current()`, and calls `signedOut` when another
 * tab signs out of the session this tab has. Returns the stop.
 */
export function shareSession(current: () => Session | null, signedOut: () => void): () => void {
  const channel = open();
  if (!channel) return () => undefined;
  channel.onmessage = (event: MessageEvent<Message>) => {
    const session = current();
    if (event.data.kind === 'ask' && usable(session)) channel.postMessage({ kind: 'session', session } satisfies Message);
    if (event.data.kind === 'signed-out' && session?.token === event.data.token) signedOut();
  };
  return () => channel.close();
}

/** Tells the other tabs that `token`'s session ended here. */
export function announceSignOut(token: string): void {
  const channel = open();
  channel?.postMessage({ kind: 'signed-out', token } satisfies Message);
  channel?.close();
}
