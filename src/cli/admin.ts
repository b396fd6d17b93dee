import { randomBytes } from 'node:crypto';
import { createApiKey, revokeApiKey } from '../api-keys/store.js';
import {
  addOrganizationMember,
  addWorkspaceMember,
  createOrganization,
  createPersonalAccessToken,
  createUser,
  createWorkspace,
  revokePersonalAccessToken,
} from '../account/admin.js';
import type { OrgRole, WorkspaceRole } from '../lib/permissions.js';
import { parseDuration } from '../lib/durations.js';
import { toIso } from '../lib/iso.js';
import { isEmail } from '../lib/email.js';
import { CliError, UsageError, required } from './args.js';
import { bool, str, type AdminCommand } from './admin-command.js';
import { LIST_COMMANDS } from './admin-lists.js';
import { DASHBOARD_LINK } from './dashboard-link.js';
import { ROTATE_MASTER_KEY } from './rotate-master-key.js';

function positiveInt(values: Record<string, unknown>, name: string): number | null {
  const raw = values[name];
  if (raw === undefined) return null;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${name} must be a positive integer`);
  return n;
}

function oneOf<T extends string>(value: string, allowed: readonly T[], name: string): T {
  if (!allowed.includes(value as T)) throw new UsageError(`--${name} must be one of ${allowed.join(', ')}`);
  return value as T;
}

export const ADMIN_COMMANDS: Record<string, AdminCommand> = {
  'create-user': {
    usage: 'svc admin create-user --email EMAIL --name NAME [--json]',
    flags: { email: str, name: str },
    check: (v) => {
      const email = required(v, 'email');
      if (!isEmail(email)) throw new UsageError(`--email must be an e-mail address such as ada@example.com, got "${email}"`);
      required(v, 'name');
    },
    run: async (v, ctx) => createUser(ctx!.db, { email: v.email as string, name: v.name as string }, ctx!.clock.now()),
  },
  'create-org': {
    usage: 'svc admin create-org --slug SLUG --name NAME [--logo URL] [--json]',
    flags: { slug: str, name: str, logo: str },
    run: async (v, ctx) =>
      createOrganization(ctx!.db, { slug: required(v, 'slug'), name: required(v, 'name'), logo: (v.logo as string) ?? null }, ctx!.clock.now()),
  },
  'create-workspace': {
    usage: 'svc admin create-workspace --org ORG_ID --slug SLUG --name NAME [--json]',
    flags: { org: str, slug: str, name: str },
    run: async (v, ctx) =>
      createWorkspace(ctx!.db, { organizationId: required(v, 'org'), slug: required(v, 'slug'), name: required(v, 'name') }, ctx!.clock.now()),
  },
  'add-member': {
    usage:
      'svc admin add-member --user USER_ID (--org ORG_ID --role owner|admin|member | --workspace WSP_ID --role owner|admin|viewer) [--json]',
    flags: { user: str, org: str, workspace: str, role: str },
    run: async (v, ctx) => {
      const userId = required(v, 'user');
      const role = required(v, 'role');
      const now = ctx!.clock.now();
      if (v.org && !v.workspace) {
        const r = oneOf<OrgRole>(role, ['owner', 'admin', 'member'], 'role');
        await addOrganizationMember(ctx!.db, { organizationId: v.org as string, userId, role: r }, now);
        return { userId, organizationId: v.org, role: r };
      }
      if (v.workspace && !v.org) {
        const r = oneOf<WorkspaceRole>(role, ['owner', 'admin', 'viewer'], 'role');
        await addWorkspaceMember(ctx!.db, { workspaceId: v.workspace as string, userId, role: r }, now);
        return { userId, workspaceId: v.workspace, role: r };
      }
      throw new UsageError('give exactly one of --org or --workspace');
    },
  },
  'create-api-key': {
    usage: 'svc admin create-api-key --workspace WSP_ID --name NAME [--test] [--rate-limit N] [--json]',
    flags: { workspace: str, name: str, test: bool, 'rate-limit': str },
    run: async (v, ctx) => {
      const { row, key } = await createApiKey(
        ctx!.db,
        { workspaceId: required(v, 'workspace'), name: required(v, 'name'), test: v.test === true, rateLimit: positiveInt(v, 'rate-limit') },
        ctx!.clock.now(),
      );
      return { id: row.id, workspaceId: row.workspace_id, name: row.name, test: row.test, key };
    },
  },
  'create-token': {
    usage: 'svc admin create-token --user USER_ID --name NAME [--test] [--rate-limit N] [--expires-in 30d] [--json]',
    flags: { user: str, name: str, test: bool, 'rate-limit': str, 'expires-in': str },
    run: async (v, ctx) => {
      const now = ctx!.clock.now();
      let expiresAt: Date | null = null;
      if (v['expires-in'] !== undefined) {
        const ms = parseDuration(v['expires-in'] as string);
        if (!ms) throw new UsageError('--expires-in must be a duration such as 12h or 30d');
        expiresAt = new Date(now.getTime() + ms);
      }
      const userId = required(v, 'user');
      const pat = await createPersonalAccessToken(
        ctx!.db,
        { userId, name: required(v, 'name'), test: v.test === true, rateLimit: positiveInt(v, 'rate-limit'), expiresAt },
        now,
      );
      return { id: pat.id, userId, token: pat.token, expiresAt: expiresAt ? toIso(expiresAt) : null };
    },
  },
  'revoke-api-key': {
    usage: 'svc admin revoke-api-key --id KEY_ID [--json]',
    flags: { id: str },
    run: async (v, ctx) => {
      const row = await revokeApiKey(ctx!.db, null, required(v, 'id'), ctx!.clock.now());
      if (!row) throw new CliError(`there is no API key "${v.id}" (list them with svc admin list-api-keys)`);
      return { id: row.id, revokedAt: toIso(row.revoked_at!) };
    },
  },
  'revoke-token': {
    usage: 'svc admin revoke-token --id PAT_ID [--json]',
    flags: { id: str },
    run: async (v, ctx) => {
      if (!(await revokePersonalAccessToken(ctx!.db, required(v, 'id'), ctx!.clock.now()))) throw new CliError(`there is no personal access token "${v.id}"`);
      return { id: v.id, revoked: true };
    },
  },
  'master-key': {
    usage: 'svc admin master-key [--json]   (prints a new random SVC_MASTER_KEY, alone on its line: svc admin master-key > new.key)',
    flags: {},
    needsDb: false,
    run: async () => ({ masterKey: randomBytes(32).toString('hex') }),
    // The key alone, so that `> new.key` then `rotate-master-key --new - < new.key` works as it is.
    text: (result) => `${result.masterKey as string}\n`,
  },
  'rotate-master-key': ROTATE_MASTER_KEY,
  ...LIST_COMMANDS,
  ...DASHBOARD_LINK,
};
