import { useEffect, useRef, useState, type FormEvent } from 'react';
import type { SignInReason } from '../../api/app-state';
import { apiClient, exchangeCode } from '../../api/client';
import type { Session } from '../../api/session';
import { ErrorBox } from '../../components/error-box';

/** The code of a sign-in link (`/dashboard/#code=...`), taken out of the address bar at once. */
function takeCode(): string | null {
  const code = new URLSearchParams(location.hash.slice(1)).get('code');
  // The fragment never reaches a server; it leaves the address bar and the history too.
  if (location.hash) history.replaceState(history.state, '', location.pathname + location.search);
  return code;
}

const REASONS: Record<Exclude<SignInReason, null>, string> = {
  'signed-out': 'You are signed out. The session token was cleared from this tab.',
  expired: 'Your session ended (it expired or was revoked): sign in again.',
};

/** Sign in with a one-time link's code, or with a pasted personal access token. */
export function SignIn({ onSignedIn, reason }: { onSignedIn(session: Session): void; reason: SignInReason }) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const started = useRef(false);

  useEffect(() => {
    const redeem = () => {
      const code = takeCode();
      if (!code) return;
      setError(null);
      setBusy(true);
      exchangeCode(code).then(
        (session) => onSignedIn({ token: session.token, source: 'link', user: session.user, expiresAt: session.expiresAt }),
        (e: unknown) => {
          setError(e);
          setBusy(false);
        },
      );
    };
    if (!started.current) {
      started.current = true;
      redeem();
    }
    // A link pasted into this tab while it shows this page changes only the fragment.
    addEventListener('hashchange', redeem);
    return () => removeEventListener('hashchange', redeem);
  }, [onSignedIn]);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const input = new FormData(event.currentTarget).get('token');
    const token = typeof input === 'string' ? input.trim() : '';
    setError(null);
    if (!/^svc_pat_/.test(token)) {
      setError(new Error('Paste a personal access token (svc_pat_...). API keys (svc_sk_...) belong to programs, not to people.'));
      return;
    }
    setBusy(true);
    try {
      const me = await apiClient(token, undefined, { unauthenticated: () => undefined, rateLimited: () => undefined }).GET('/v1/me');
      onSignedIn({ token, source: 'token', user: me.user && { id: me.user.id, email: me.user.email, name: me.user.name }, expiresAt: null });
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };

  return (
    <main className="sign-in container">
      <article>
        <header>
          <h1>Sign in to svc</h1>
        </header>
        {reason ? <p role="status">{REASONS[reason]}</p> : null}
        {busy ? <p aria-busy="true">Signing in…</p> : null}
        <ErrorBox error={error} />
        <p>
          Open a sign-in link: <code>npm start</code> prints one for the demo owner, and{' '}
          <code>npx svc admin dashboard-link</code> makes a new one for the demo owner (<code>--user you@example.com</code> for anyone else). A link works once, for 10 minutes.
        </p>
        <form onSubmit={submit}>
          <label>
            Or paste a personal access token
            <input name="token" type="password" autoComplete="off" spellCheck={false} placeholder="svc_pat_..." required />
            <small>It stays in this browser's tabs only (session storage; a new tab asks an open one for it) and is cleared when you sign out or close them.</small>
          </label>
          <button type="submit" disabled={busy}>
            Sign in
          </button>
        </form>
      </article>
    </main>
  );
}
