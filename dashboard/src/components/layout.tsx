import type { ReactNode } from 'react';
import { Link, useLocation } from 'wouter';
import { useApp } from '../api/app-state';
import { NAV } from '../pages';
import { JumpToId } from './jump';
import { RateLimitNotice } from './rate-limit-notice';

/**
 * The frame of every signed-in page: the workspace switcher, a box that opens any id, the sections,
 * notifications, who is signed in with which role, and sign-out. On a phone it wraps onto a few
 * rows (styles/layout.css); nothing is hidden.
 */
export function Layout({ children }: { children: ReactNode }) {
  const app = useApp();
  const [location] = useLocation();
  const unread = app.unread.count + (app.unread.more ? '+' : '');
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <nav aria-label="Account">
          <ul>
            <li>
              <Link href="/" className="brand">
                svc
              </Link>
            </li>
            <li>
              <WorkspaceSwitcher />
            </li>
            <li className="jump-item">
              <JumpToId />
            </li>
          </ul>
          <ul>
            <li>
              <Link href="/notifications" data-testid="notifications-link">
                Notifications
                {app.unread.count > 0 ? (
                  <mark className="badge tone-info count">
                    <span data-testid="unread-count">{unread}</span>
                    <span className="visually-hidden"> unread</span>
                  </mark>
                ) : null}
              </Link>
            </li>
            <li className="who" data-testid="who">
              {app.session.user?.name ?? 'Personal access token'}
              {app.workspace ? <small className="muted"> · {app.workspace.role}</small> : null}
              {app.session.user ? <small className="muted email">{app.session.user.email}</small> : null}
            </li>
            <li>
              <button type="button" className="secondary outline small" onClick={() => void app.signOut()}>
                Sign out
              </button>
            </li>
          </ul>
        </nav>
      </header>
      <div className="shell">
        <nav className="sections" aria-label="Sections">
          <ul>
            {NAV.filter((n) => !n.permission || app.can(n.permission)).map((n) => (
              <li key={n.href}>
                <Link href={n.href} aria-current={location === n.href || location.startsWith(`${n.href}/`) ? 'page' : undefined}>
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main" className="content">
          <RateLimitNotice waitUntil={app.waitUntil} />
          {/* Another workspace: every page starts afresh. */}
          {app.workspace ? <div key={app.workspace.id}>{children}</div> : <NoWorkspace />}
        </main>
      </div>
    </>
  );
}

function WorkspaceSwitcher() {
  const app = useApp();
  if (!app.workspace) return null;
  return (
    <select aria-label="Workspace" value={app.workspace.id} onChange={(e) => app.setWorkspace(e.target.value)} data-testid="workspace-switcher">
      {app.organizations.map((org) => (
        <optgroup key={org.id} label={org.name}>
          {(org.workspaces ?? []).map((w) => (
            <option key={w.id} value={w.id}>
              {org.name} / {w.name}
            </option>
          ))}
        </optgroup>
      ))}
    </select>
  );
}

function NoWorkspace() {
  return (
    <article className="empty">
      <h2>No workspace yet</h2>
      <p>
        You are not a member of any workspace. Ask an owner of your organization to add you, or create one on the server:{' '}
        <code>svc admin create-workspace --org ORG_ID --slug main --name Main</code>.
      </p>
    </article>
  );
}
