import { useCallback, useState } from 'react';
import { Redirect, Route, Router, Switch, useLocation } from 'wouter';
import { SignedIn, type SignInReason } from './api/app-state';
import { loadSession, saveSession, type Session } from './api/session';
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

function Shell() {
  const [session, setSession] = useState<Session | null>(loadSession);
  const [reason, setReason] = useState<SignInReason>(null);
  const [, navigate] = useLocation();

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

  // A sign-in link opened in a tab that is already signed in still signs in with it.
  if (!session || location.hash.includes('code=')) return <SignIn onSignedIn={signedIn} reason={reason} />;
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
