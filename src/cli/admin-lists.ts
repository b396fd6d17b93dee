import { listAllApiKeys } from '../api-keys/store.js';
import { exists, listAllOrganizations, listAllUsers, listAllWorkspaces } from '../account/admin.js';
import type { Queryable } from '../db/db.js';
import { CliError } from './args.js';
import { str, type AdminCommand } from './admin-command.js';

/** The value of an optional filter flag naming a row, after checking that the row exists. */
async function existing(q: Queryable, table: 'organizations' | 'workspaces', what: string, id: unknown): Promise<string | null> {
  if (typeof id !== 'string') return null;
  if (!(await exists(q, table, id))) throw new CliError(`there is no ${what} "${id}"`);
  return id;
}

/** `svc admin list-*`: a table on the terminal, `{"data": [...]}` with --json. */
export const LIST_COMMANDS: Record<string, AdminCommand> = {
  'list-users': {
    usage: 'svc admin list-users [--json]',
    flags: {},
    run: async (_v, ctx) => ({ data: await listAllUsers(ctx!.db) }),
  },
  'list-orgs': {
    usage: 'svc admin list-orgs [--json]',
    flags: {},
    run: async (_v, ctx) => ({ data: await listAllOrganizations(ctx!.db) }),
  },
  'list-workspaces': {
    usage: 'svc admin list-workspaces [--org ORG_ID] [--json]',
    flags: { org: str },
    run: async (v, ctx) => ({ data: await listAllWorkspaces(ctx!.db, await existing(ctx!.db, 'organizations', 'organization', v.org)) }),
  },
  'list-api-keys': {
    usage: 'svc admin list-api-keys [--workspace WSP_ID] [--json]   (prefixes only: keys are shown once, at creation)',
    flags: { workspace: str },
    run: async (v, ctx) => ({ data: await listAllApiKeys(ctx!.db, await existing(ctx!.db, 'workspaces', 'workspace', v.workspace)) }),
  },
};
