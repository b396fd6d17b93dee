import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import type { ResponseData } from '@svc/sdk';
import { ErrorBox } from '../components/error-box';
import { apiClient, type SvcClient } from './client';
import { useLoad } from './hooks';
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

/** Everything the signed-in pages share: the session, the workspaces and the chosen one, the unread count. */
export function SignedIn({ session, onSignedOut, children }: Props) {
  const expired = useCallback(() => {
    clearSession();
    onSignedOut('expired');
  }, [onSignedOut]);
  const userClient = useMemo(() => apiClient(session.token, undefined, expired), [session.token, expired]);
  const orgs = useLoad(async () => (await userClient.GET('/v1/organizations', { params: { query: { expand: ['workspaces'] } } })).data, [userClient]);
  const [chosen, setChosen] = useState<string | null>(rememberedWorkspace());

  const all = useMemo(() => (orgs.data ?? []).flatMap((o) => o.workspaces ?? []), [orgs.data]);
  const workspace = all.find((w) => w.id === chosen) ?? all[0] ?? null;
  const client = useMemo(() => apiClient(session.token, workspace?.id, expired), [session.token, workspace?.id, expired]);

  const unreadList = useLoad(() => userClient.GET('/v1/notifications', { params: { query: { unread: true, limit: 100 } } }), [userClient]);
  // The count follows what happens elsewhere (an endpoint auto-disabled): looked at again every minute.
  useEffect(() => {
    const timer = setInterval(unreadList.reload, 60_000);
    return () => clearInterval(timer);
  }, [unreadList.reload]);

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
    signOut: async () => {
      // A link's session token is revoked on the server; a pasted token is only forgotten here.
      if (session.source === 'link') await userClient.DELETE('/v1/dashboard/sessions/current').catch(() => undefined);
      clearSession();
      onSignedOut('signed-out');
    },
  };

  if (orgs.error) return <ErrorBox error={orgs.error} retry={orgs.reload} />;
  if (!orgs.data) return <p aria-busy="true">Loading your workspaces…</p>;
  return <Context.Provider value={state}>{children}</Context.Provider>;
}

export { loadSession, saveSession };
