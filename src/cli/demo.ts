import { randomBytes } from 'node:crypto';
import { createApiKey } from '../api-keys/store.js';
import type { Db } from '../db/db.js';
import type { SecretBox } from '../lib/secretbox.js';
import { seedDemoData, type DemoSample } from './demo-data.js';
import {
  addOrganizationMember,
  addWorkspaceMember,
  createOrganization,
  createPersonalAccessToken,
  createUser,
  createWorkspace,
} from '../account/admin.js';

export interface DemoSet {
  baseUrl: string;
  organization: { id: string; slug: string; name: string };
  workspaces: { id: string; slug: string; name: string; apiKey: string; testApiKey: string }[];
  users: { id: string; email: string; name: string; role: 'owner' | 'admin' | 'viewer' | 'outsider'; token: string }[];
  outsiderOrganization: { id: string; slug: string; workspaceId: string };
  /** Products, a paused endpoint (and its secret) in the first workspace, when seeded (seedDemoData). */
  sample?: DemoSample;
}

/**
 * A fresh, ready-to-use set: an organization with two workspaces and keys, an owner (organization
 * owner, so implicit owner of both), an admin and a viewer of the first workspace only, and an
 * outsider in an organization of their own. Slugs and e-mails carry a random suffix so sets never clash.
 * Given the master key's `box`, the first workspace also gets sample data (demo-data.ts); tests
 * build on the bare set.
 */
export async function createDemo(db: Db, baseUrl: string, now: Date, box?: SecretBox): Promise<DemoSet> {
  const tag = randomBytes(3).toString('hex');
  return db.tx(async (q) => {
    const org = await createOrganization(q, { slug: `acme-${tag}`, name: 'Acme Inc.' }, now);
    const workspaces = [];
    // A millisecond apart, so lists (oldest first) and the dashboard's first choice are always Store,
    // the workspace with the sample data, then Staging.
    for (const [i, [slug, name]] of [['store', 'Store'], ['staging', 'Staging']].entries()) {
      const ws = await createWorkspace(q, { organizationId: org.id, slug, name }, new Date(now.getTime() + i));
      const live = await createApiKey(q, { workspaceId: ws.id, name: 'Demo key', test: false }, now);
      const test = await createApiKey(q, { workspaceId: ws.id, name: 'Demo test key', test: true }, now);
      workspaces.push({ id: ws.id, slug, name, apiKey: live.key, testApiKey: test.key });
    }

    const users: DemoSet['users'] = [];
    for (const role of ['owner', 'admin', 'viewer', 'outsider'] as const) {
      const user = await createUser(q, { email: `${role}-${tag}@example.com`, name: `Demo ${role}` }, now);
      const pat = await createPersonalAccessToken(q, { userId: user.id, name: 'Demo token', test: false }, now);
      users.push({ ...user, role, token: pat.token });
    }
    const [owner, admin, viewer, outsider] = users;
    await addOrganizationMember(q, { organizationId: org.id, userId: owner.id, role: 'owner' }, now);
    await addOrganizationMember(q, { organizationId: org.id, userId: admin.id, role: 'member' }, now);
    await addOrganizationMember(q, { organizationId: org.id, userId: viewer.id, role: 'member' }, now);
    await addWorkspaceMember(q, { workspaceId: workspaces[0].id, userId: admin.id, role: 'admin' }, now);
    await addWorkspaceMember(q, { workspaceId: workspaces[0].id, userId: viewer.id, role: 'viewer' }, now);

    const otherOrg = await createOrganization(q, { slug: `other-${tag}`, name: 'Other Corp.' }, now);
    const otherWs = await createWorkspace(q, { organizationId: otherOrg.id, slug: 'main', name: 'Main' }, now);
    await addOrganizationMember(q, { organizationId: otherOrg.id, userId: outsider.id, role: 'owner' }, now);

    const set: DemoSet = {
      baseUrl,
      organization: org,
      workspaces,
      users,
      outsiderOrganization: { id: otherOrg.id, slug: otherOrg.slug, workspaceId: otherWs.id },
    };
    if (box) set.sample = await seedDemoData(q, box, workspaces[0].id, now);
    return set;
  });
}
