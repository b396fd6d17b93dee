import { API_KEY_PERMISSIONS, WORKSPACE_ROLE_PERMISSIONS, type WorkspaceRole } from '../../lib/permissions.js';
import type { RouteAuth } from '../../http/auth/principal.js';

const ROLE_NAMES: Record<WorkspaceRole, string> = { owner: 'Owner', admin: 'Admin', viewer: 'Viewer' };

/** `a`, `a or b`, `a, b or c`. */
const either = (words: string[]) => (words.length <= 1 ? (words[0] ?? '') : `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}`);

/**
 * Who may call an operation, in a sentence for its description, from the route's `auth` and the
 * roles' permission sets (lib/permissions.ts): so the document says what the service checks.
 */
export function accessDescription(auth: RouteAuth | undefined): string | null {
  if (!auth) return null;
  if (auth.scope === 'none') return 'Takes no credential.';
  if (auth.scope === 'any') return 'Any credential: an API key or a personal access token.';
  if (auth.scope === 'user') return "A personal access token (or a dashboard session) acting as its user; an API key gets 403.";
  const permission = auth.permission!;
  const roles = (Object.keys(WORKSPACE_ROLE_PERMISSIONS) as WorkspaceRole[]).filter((role) => WORKSPACE_ROLE_PERMISSIONS[role].includes(permission));
  const tokens = `a personal access token of a workspace ${either(roles.map((r) => ROLE_NAMES[r]))}`;
  const who = API_KEY_PERMISSIONS.includes(permission) ? `an API key of the workspace, or ${tokens}` : `${tokens} (API keys cannot)`;
  return `Needs \`${permission}\` in the workspace: ${who}.`;
}
