import { Type } from '@sinclair/typebox';
import { EXAMPLE_EMAIL, EXAMPLE_WORKSPACE_ID, exampleId } from '../http/examples.js';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/db.js';
import { ExpandParam } from '../http/expand.js';
import { ListOf } from '../http/list.js';
import { PageQuery } from '../http/pagination.js';
import { resource } from '../http/resource.js';
import { toIso } from '../lib/iso.js';
import { findUser, listOrganizations, listWorkspaces } from './store.js';

const any = { scope: 'any' } as const;
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

const WorkspaceSummary = Type.Object({
  id: Type.String({ description: 'wsp_...', examples: [EXAMPLE_WORKSPACE_ID] }),
  slug: Type.String({ examples: ['store'] }),
  name: Type.String({ examples: ['Store'] }),
  image: Nullable(Type.String({ examples: ['https://cdn.example.com/store.png'] })),
  role: Type.String({ description: 'The caller\'s resolved role: owner, admin, viewer (or api_key).', examples: ['admin'] }),
  implicit: Type.Boolean({ description: 'True when the role comes from the organization rather than a workspace membership.' }),
  permissions: Type.Array(Type.String({ examples: ['workspace:products:write'] })),
});

const Workspace = Type.Composite([WorkspaceSummary, Type.Object({ organizationId: Type.String({ examples: [exampleId('org')] }) })]);

const Organization = Type.Object({
  id: Type.String({ description: 'org_...', examples: [exampleId('org')] }),
  slug: Type.String({ examples: ['acme'] }),
  name: Type.String({ examples: ['Acme Inc.'] }),
  logo: Nullable(Type.String({ examples: ['https://cdn.example.com/acme.png'] })),
  role: Type.String({ description: 'The caller\'s role in the organization: owner, admin, member (or api_key).', examples: ['owner'] }),
  permissions: Type.Array(Type.String({ examples: ['org:read'] })),
  workspaces: Type.Optional(Type.Array(WorkspaceSummary, { description: 'Present only with expand=workspaces.' })),
});

const Me = Type.Object({
  user: Nullable(
    Type.Object({
      id: Type.String({ examples: [exampleId('usr')] }),
      email: Type.String({ examples: [EXAMPLE_EMAIL] }),
      name: Type.String({ examples: ['Ada Lovelace'] }),
      createdAt: Type.String({ format: 'date-time' }),
    }),
  ),
  credential: Type.Object({
    type: Type.Union([Type.Literal('api_key'), Type.Literal('personal_access_token')]),
    id: Type.String({ examples: [exampleId('key')] }),
    test: Type.Boolean(),
    workspaceId: Nullable(Type.String({ description: 'The bound workspace of an API key; null for a token.', examples: [EXAMPLE_WORKSPACE_ID] })),
  }),
});

const ORG_EXPAND = ['workspaces'] as const;
const OrgListQuery = Type.Object({ ...PageQuery, expand: ExpandParam(ORG_EXPAND) }, { additionalProperties: false });

/** What the account routes use of the service. */
export type AccountDeps = { db: Db };

export function accountRoutes(app: FastifyInstance, { db }: AccountDeps): void {
  const account = resource(app, { path: '', tag: 'Account', read: any, write: any });

  account.get({
    path: '/me',
    operationId: 'getMe',
    summary: 'The calling user and credential',
    response: Me,
    handle: async ({ request }) => {
      const p = request.principal!;
      const user = p.kind === 'pat' ? await findUser(db, p.userId) : null;
      return {
        user: user && { id: user.id, email: user.email, name: user.name, createdAt: toIso(user.created_at) },
        credential: {
          type: p.kind === 'pat' ? ('personal_access_token' as const) : ('api_key' as const),
          id: p.credentialId,
          test: p.test,
          workspaceId: p.kind === 'api_key' ? p.workspaceId : null,
        },
      };
    },
  });

  account.all({
    path: '/organizations',
    operationId: 'listOrganizations',
    summary: 'Organizations of the caller (a small set: both page URLs null)',
    query: OrgListQuery,
    expand: ORG_EXPAND,
    response: ListOf(Organization, 'Every organization of the caller.'),
    items: async ({ request, expand }) => {
      const principal = request.principal!;
      const orgs = await listOrganizations(db, principal);
      if (expand.has('workspaces')) {
        const workspaces = await listWorkspaces(db, principal);
        for (const org of orgs) {
          org.workspaces = workspaces.filter((w) => w.organizationId === org.id).map(({ organizationId: _, ...w }) => w);
        }
      }
      return orgs;
    },
  });

  account.all({
    path: '/workspaces',
    operationId: 'listWorkspaces',
    summary: 'Workspaces of the caller (a small set: both page URLs null)',
    response: ListOf(Workspace, 'Every workspace the caller can act in.'),
    items: ({ request }) => listWorkspaces(db, request.principal!),
  });
}
