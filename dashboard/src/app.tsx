import { useCallback, useEffect, useRef, useState } from 'react';
import { Redirect, Route, Router, Switch, useLocation } from 'wouter';
import { SignedIn, type SignInReason } from './api/app-state';
import { askOtherTabs, shareSession } from './api/handoff';
import { clearSession, loadSession, saveSession, type Session } from './api/session';
import { Layout } from './components/layout';
import { PAGES } from './pages';
import { SignIn } from './pages/sign-in';

function Pages() {
  return (
    <Switch>
      {PAGES.map((page) => (
        <Route key={page.path} path={page.path} component={page.component} />
      ))}
      <Route path="/sign-in">
        <Redirect to="/" />
      </Route>
      <Route>
        <article className="empty">
          <h2>No such page</h2>
          <p>Pick a section on the left.</p>
        </article>
      </Route>
    </Switch>
  );
}

/** How long a tab without a session waits for an open tab to hand it one (handoff.ts). */
const ASK_MS = 500;

const hasCode = () => location.hash.includes('code=');

function Shell() {
  const [session, setSession] = useState<Session | null>(loadSession);
  const [reason, setReason] = useState<SignInReason>(null);
  const [asking, setAsking] = useState(() => !loadSession() && !hasCode());
  // A sign-in link pasted into an open tab changes only the fragment: the page renders again for it.
  const [, setHash] = useState(location.hash);
  const [, navigate] = useLocation();
  const current = useRef(session);
  current.current = session;

  const signedIn = useCallback(
    (next: Session) => {
      saveSession(next);
      setSession(next);
      setReason(null);
      navigate('/', { replace: true });
    },
    [navigate],
  );
  const signedOut = useCallback(
    (why: SignInReason) => {
      setSession(null);
      setReason(why);
      navigate('/sign-in', { replace: true });
    },
    [navigate],
  );

  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);

  useEffect(() => {
    if (!asking) return;
    let live = true;
    void askOtherTabs(ASK_MS).then((found) => {
      if (!live) return;
      // Handed a session: this tab stays on the page it was opened at.
      if (found) {
        saveSession(found);
        setSession(found);
      }
      setAsking(false);
    });
    return () => {
      live = false;
    };
  }, [asking]);

  useEffect(
    () =>
      shareSession(
        () => current.current,
        () => {
          clearSession();
          signedOut('signed-out');
        },
      ),
    [signedOut],
  );

  if (asking) {
    return (
      <main className="container">
        <p aria-busy="true">Looking for a session in another tab…</p>
      </main>
    );
  }
  // A sign-in link opened in a tab that is already signed in still signs in with it.
  if (!session || hasCode()) return <SignIn onSignedIn={signedIn} reason={reason} />;
  return (
    <SignedIn key={session.token} session={session} onSignedOut={signedOut}>
      <Layout>
        <Pages />
      </Layout>
    </SignedIn>
  );
}

export function App() {
  return (
    <Router base="/dashboard">
      <Shell />
    </Router>
  );
}
