import { createContext, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import type { ResponseData } from '@svc/sdk';
import { ErrorBox } from '../components/error-box';
import { RateLimitNotice } from '../components/rate-limit-notice';
import { announceSignOut } from './handoff';
import { apiClient, type ClientEvents, type SvcClient } from './client';
import { useLoad, useShared } from './hooks';
import { usePolling } from './polling';
import { clearSession, loadSession, rememberedWorkspace, rememberWorkspace, saveSession, type Session } from './session';

export type Organization = ResponseData<'/v1/organizations', 'get'>['data'][number];
export type WorkspaceSummary = NonNullable<Organization['workspaces']>[number];

export interface AppState {
  session: Session;
  /** Calls that act in the current workspace (Service-Workspace-Id). */
  client: SvcClient;
  organizations: Organization[];
  workspace: WorkspaceSummary | null;
  organizationOf(workspaceId: string): Organization | undefined;
  setWorkspace(id: string): void;
  /** Whether the caller's role in the current workspace holds this permission (write controls ask this). */
  can(permission: string): boolean;
  unread: { count: number; more: boolean; refresh(): void };
  /** While the service has asked the dashboard to wait (429): when its requests go again (ms since the epoch). */
  waitUntil: number | null;
  signOut(): Promise<void>;
}

const Context = createContext<AppState | null>(null);

export function useApp(): AppState {
  const state = useContext(Context);
  if (!state) throw new Error('useApp outside a signed-in page');
  return state;
}

/** Why the sign-in page is shown, when it is not the first visit. */
export type SignInReason = 'signed-out' | 'expired' | null;

interface Props {
  session: Session;
  onSignedOut(reason: SignInReason): void;
  children: ReactNode;
}

/** How long the caller's organizations and workspaces are reused (cache.ts) before they are asked for again. */
const ORGANIZATIONS_MAX_AGE_MS = 5 * 60_000;

/** Everything the signed-in pages share: the session, the workspaces and the chosen one, the unread count. */
export function SignedIn({ session, onSignedOut, children }: Props) {
  const [waitUntil, setWaitUntil] = useState<number | null>(null);
  const events = useMemo<ClientEvents>(
    () => ({
      unauthenticated: () => {
        clearSession();
        onSignedOut('expired');
      },
      rateLimited: (seconds) => setWaitUntil(Date.now() + seconds * 1000),
    }),
    [onSignedOut],
  );
  // The notice goes when the wait is over: the requests held back are on their way again.
  useEffect(() => {
    if (waitUntil === null) return;
    const timer = setTimeout(() => setWaitUntil(null), Math.max(0, waitUntil - Date.now()));
    return () => clearTimeout(timer);
  }, [waitUntil]);

  const userClient = useMemo(() => apiClient(session.token, undefined, events), [session.token, events]);
  const orgs = useShared(
    'organizations',
    ORGANIZATIONS_MAX_AGE_MS,
    async () => (await userClient.GET('/v1/organizations', { params: { query: { expand: ['workspaces'] } } })).data,
    [userClient],
  );
  const [chosen, setChosen] = useState<string | null>(rememberedWorkspace());

  const all = useMemo(() => (orgs.data ?? []).flatMap((o) => o.workspaces ?? []), [orgs.data]);
  // Unless another was chosen, the first: the oldest the person can use.
  const workspace = all.find((w) => w.id === chosen) ?? all[0] ?? null;
  const client = useMemo(() => apiClient(session.token, workspace?.id, events), [session.token, workspace?.id, events]);

  const unreadList = useLoad(() => userClient.GET('/v1/notifications', { params: { query: { unread: true, limit: 100 } } }), [userClient]);
  // The count follows what happens elsewhere (an endpoint auto-disabled): looked at again after a
  // minute, less often while it stays the same (up to 5 minutes), not while the tab is hidden.
  usePolling(unreadList.reload, unreadList.data ?? (unreadList.error || undefined), unreadList.data?.data.map((n) => n.id).join() ?? 'error', {
    startMs: 60_000,
    maxMs: 300_000,
  });

  const state: AppState = {
    session,
    client,
    organizations: orgs.data ?? [],
    workspace,
    organizationOf: (id) => (orgs.data ?? []).find((o) => o.workspaces?.some((w) => w.id === id)),
    setWorkspace: (id) => {
      rememberWorkspace(id);
      setChosen(id);
    },
    can: (permission) => workspace?.permissions.includes(permission) ?? false,
    unread: { count: unreadList.data?.data.length ?? 0, more: Boolean(unreadList.data?.nextPageUrl), refresh: unreadList.reload },
    waitUntil,
    signOut: async () => {
      // A link's session token is revoked on the server; a pasted token is only forgotten here.
      if (session.source === 'link') await userClient.DELETE('/v1/dashboard/sessions/current').catch(() => undefined);
      announceSignOut(session.token);
      clearSession();
      onSignedOut('signed-out');
    },
  };

  if (orgs.error) return <ErrorBox error={orgs.error} retry={orgs.reload} />;
  if (!orgs.data) {
    return (
      <main className="container">
        <RateLimitNotice waitUntil={waitUntil} />
        <p aria-busy="true">Loading your workspaces…</p>
      </main>
    );
  }
  return <Context.Provider value={state}>{children}</Context.Provider>;
}

export { loadSession, saveSession };
