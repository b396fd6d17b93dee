import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, userOf, type TestApp } from './helpers/app.js';
import { expectError, ok } from './helpers/expect.js';

interface WorkspaceSummary {
  id: string;
  slug: string;
  name: string;
  image: string | null;
  role: string;
  implicit: boolean;
  permissions: string[];
}

/** `expand` (docs/api.md#expand) and the organization and workspace fields on GET /v1/organizations. */
describe('GET /v1/organizations and expand', () => {
  let t: TestApp;
  let orgId: string;
  let ws1: string;
  let ws2: string;
  const token = (role: 'owner' | 'admin' | 'viewer' | 'outsider') => userOf(t.demo, role).token;

  beforeAll(async () => {
    t = await startTestApp();
    orgId = t.demo.organization.id;
    [ws1, ws2] = t.demo.workspaces.map((w) => w.id);
  });
  afterAll(() => t.close());

  const orgs = async (who: string, query = '') => ok(await t.call(who, 'GET', `/v1/organizations${query}`));
  const byId = (list: { data: { id: string }[] }, id: string) => list.data.find((o) => o.id === id) as { workspaces?: WorkspaceSummary[] } & Record<string, unknown>;

  it('lists the caller organizations with their documented fields, without workspaces unless expanded', async () => {
    const list = await orgs(token('owner'));
    expect(list).toEqual({ data: [expect.any(Object)], nextPageUrl: null, previousPageUrl: null });
    const [org] = list.data;
    expect(org).toMatchObject({ id: orgId, slug: t.demo.organization.slug, name: t.demo.organization.name, logo: null, role: 'owner' });
    expect(org.permissions).toEqual(expect.arrayContaining(['org:members:read', 'org:members:write']));
    expect('workspaces' in org).toBe(false);

    const member = byId(await orgs(token('viewer')), orgId);
    expect(member.role).toBe('member');
    expect(member.permissions).not.toContain('org:members:write');
    const outsider = await orgs(token('outsider'));
    expect(outsider.data.map((o: { id: string }) => o.id)).toEqual([t.demo.outsiderOrganization.id]);
  });

  it('expand=workspaces adds each workspace with the caller role, implicit flag and permissions', async () => {
    const owner = byId(await orgs(token('owner'), '?expand=workspaces'), orgId).workspaces!;
    expect(owner.map((w) => w.id).sort()).toEqual([ws1, ws2].sort());
    for (const w of owner) {
      const demo = t.demo.workspaces.find((d) => d.id === w.id)!;
      expect(w).toMatchObject({ slug: demo.slug, name: demo.name, image: null, role: 'owner', implicit: true });
      expect(w.permissions).toEqual(expect.arrayContaining(['workspace:products:read', 'workspace:products:write', 'workspace:developer:read', 'workspace:developer:write']));
      expect(Object.keys(w).sort()).toEqual(['id', 'image', 'implicit', 'name', 'permissions', 'role', 'slug']);
    }

    const [admin] = byId(await orgs(token('admin'), '?expand=workspaces'), orgId).workspaces!;
    expect(byId(await orgs(token('admin'), '?expand=workspaces'), orgId).workspaces).toHaveLength(1);
    expect(admin).toMatchObject({ id: ws1, role: 'admin', implicit: false });
    expect(admin.permissions).toEqual(expect.arrayContaining(['workspace:products:write', 'workspace:developer:write']));

    const viewerWorkspaces = byId(await orgs(token('viewer'), '?expand=workspaces'), orgId).workspaces!;
    expect(viewerWorkspaces.map((w) => [w.id, w.role, w.implicit])).toEqual([[ws1, 'viewer', false]]);
    const viewer = viewerWorkspaces[0].permissions;
    expect(viewer).toEqual(expect.arrayContaining(['workspace:products:read', 'workspace:developer:read']));
    expect(viewer.every((p) => p.endsWith(':read'))).toBe(true);

    const outsider = byId(await orgs(token('outsider'), '?expand=workspaces'), t.demo.outsiderOrganization.id).workspaces!;
    expect(outsider.map((w) => [w.id, w.role, w.implicit])).toEqual([[t.demo.outsiderOrganization.workspaceId, 'owner', true]]);

    const forKey = (await orgs(t.demo.workspaces[1].apiKey, '?expand=workspaces')).data;
    expect(forKey.map((o: { id: string }) => o.id)).toEqual([orgId]);
    expect(forKey[0].workspaces.map((w: WorkspaceSummary) => w.id)).toEqual([ws2]);
  });

  it('trims spaces, ignores duplicates and empty entries (rule 1)', async () => {
    const plain = await orgs(token('owner'), '?expand=workspaces');
    for (const value of ['%20workspaces%20', 'workspaces,workspaces', '%20workspaces%20,%20workspaces', ',workspaces,,', 'workspaces%09']) {
      expect(await orgs(token('owner'), `?expand=${value}`), value).toEqual(plain);
    }
    for (const value of ['', ',', '%20,%20']) {
      const list = await orgs(token('owner'), `?expand=${value}`);
      expect('workspaces' in list.data[0], value).toBe(false);
    }
  });

  it('refuses an unknown name, naming it and listing the available ones (rules 2 and 3)', async () => {
    for (const [value, unknown] of [
      ['products', 'products'],
      ['workspaces,members', 'members'],
      ['Workspaces', 'Workspaces'],
      ['workspace', 'workspace'],
    ]) {
      const error = expectError(await t.call(token('owner'), 'GET', `/v1/organizations?expand=${value}`), 400, 'VALIDATION');
      expect(error.message).toContain(`"${unknown}"`);
      expect(error.message).toContain('workspaces');
    }
  });

  it('refuses a dotted path: one nesting level only (rule 4)', async () => {
    for (const value of ['workspaces.products', 'workspaces,workspaces.products', '.workspaces', 'workspaces.']) {
      const error = expectError(await t.call(token('owner'), 'GET', `/v1/organizations?expand=${value}`), 400, 'VALIDATION');
      expect(error.message).toContain('workspaces');
    }
  });

  it('paginates identically with and without expand: a small set, both URLs null, limit and page still checked (rule 5)', async () => {
    for (const query of ['', '?limit=1', '?limit=100']) {
      const plain = await orgs(token('owner'), query);
      const expanded = await orgs(token('owner'), `${query}${query ? '&' : '?'}expand=workspaces`);
      expect({ next: expanded.nextPageUrl, previous: expanded.previousPageUrl }).toEqual({ next: plain.nextPageUrl, previous: plain.previousPageUrl });
      expect(plain).toMatchObject({ nextPageUrl: null, previousPageUrl: null });
      expect(expanded.data.map((o: { id: string }) => o.id)).toEqual(plain.data.map((o: { id: string }) => o.id));
      expect(expanded.data.map(({ workspaces: _, ...o }: { workspaces: unknown }) => o)).toEqual(plain.data);
    }
    for (const query of ['limit=0', 'limit=101', 'limit=x', 'page=abc', 'page=', 'expand=workspaces&limit=0', 'expand=workspaces&page=abc', 'expand=workspaces&expand=workspaces']) {
      expectError(await t.call(token('owner'), 'GET', `/v1/organizations?${query}`), 400, 'VALIDATION');
    }
  });
});
