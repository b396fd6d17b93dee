import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/lib/ids.js';
import { pathOf, startTestApp, userOf, type TestApp } from './helpers/app.js';

/** The delivery engine writes notifications; here rows are inserted directly to test the route. */
describe('notifications', () => {
  let t: TestApp;
  const base = Date.parse('2026-03-01T00:00:00.000Z');

  const insert = async (userId: string, workspaceId: string, minutes: number, readAt: Date | null = null) => {
    const at = new Date(base + minutes * 60_000);
    const id = newId('ntf', at);
    await t.ctx.db.query(
      `INSERT INTO notifications (id, user_id, workspace_id, type, subject, message, created_at, read_at)
       VALUES ($1, $2, $3, 'webhook.endpoint.auto_disabled', $4, 'Endpoint disabled after 5 consecutive failed deliveries.', $5, $6)`,
      [id, userId, workspaceId, JSON.stringify({ id: 'whe_x', type: 'webhook_endpoint' }), at, readAt],
    );
    return id;
  };

  beforeAll(async () => {
    t = await startTestApp({ config: { rateLimitApiKey: 1_000_000, rateLimitPat: 1_000_000 } });
  });
  afterAll(() => t.close());

  it("lists only the token user's notifications, from every workspace, newest first", async () => {
    const owner = userOf(t.demo, 'owner');
    const viewer = userOf(t.demo, 'viewer');
    const [ws0, ws1] = t.demo.workspaces;
    const first = await insert(owner.id, ws0.id, 1, new Date(base + 5 * 60_000));
    const second = await insert(owner.id, ws1.id, 2);
    const theirs = await insert(viewer.id, ws0.id, 3);

    const res = await t.call(owner.token, 'GET', '/v1/notifications');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.data.map((n: { id: string }) => n.id)).toEqual([second, first]);
    expect(body.data[1]).toEqual({
      id: first,
      type: 'webhook.endpoint.auto_disabled',
      workspaceId: ws0.id,
      subject: { id: 'whe_x', type: 'webhook_endpoint' },
      message: 'Endpoint disabled after 5 consecutive failed deliveries.',
      createdAt: new Date(base + 60_000).toISOString(),
      readAt: new Date(base + 5 * 60_000).toISOString(),
    });
    expect(body.data[0].readAt).toBeNull();
    expect((await t.call(viewer.token, 'GET', '/v1/notifications')).json().data.map((n: { id: string }) => n.id)).toEqual([theirs]);
    expect((await t.call(userOf(t.demo, 'outsider').token, 'GET', '/v1/notifications')).json().data).toEqual([]);
  });

  it('paginates with keyset cursors bound to the user', async () => {
    const admin = userOf(t.demo, 'admin');
    const ids: string[] = [];
    for (let i = 10; i < 15; i++) ids.unshift(await insert(admin.id, t.demo.workspaces[0].id, i));
    const first = (await t.call(admin.token, 'GET', '/v1/notifications?limit=2')).json();
    expect(first.data.map((n: { id: string }) => n.id)).toEqual(ids.slice(0, 2));
    const second = (await t.call(admin.token, 'GET', pathOf(first.nextPageUrl))).json();
    expect(second.data.map((n: { id: string }) => n.id)).toEqual(ids.slice(2, 4));
    // Another user's token cannot follow the admin's cursor.
    const foreign = await t.call(userOf(t.demo, 'viewer').token, 'GET', pathOf(first.nextPageUrl));
    expect(foreign.statusCode).toBe(400);
    expect(foreign.json().error.code).toBe('VALIDATION');
  });

  it('marks a notification read once, lists unread ones apart, and finds no other user\'s', async () => {
    const admin = userOf(t.demo, 'admin');
    const ws = t.demo.workspaces[0].id;
    const unread = await insert(admin.id, ws, 30);
    const already = await insert(admin.id, ws, 31, new Date(base + 40 * 60_000));
    const unreadIds = async () => (await t.call(admin.token, 'GET', '/v1/notifications?unread=true&limit=100')).json().data.map((n: { id: string }) => n.id);
    expect(await unreadIds()).toContain(unread);
    expect(await unreadIds()).not.toContain(already);

    const res = await t.call(admin.token, 'POST', `/v1/notifications/${unread}/read`);
    expect(res.statusCode).toBe(200);
    const readAt = res.json().readAt;
    expect(res.json()).toMatchObject({ id: unread, readAt: expect.any(String) });
    expect(await unreadIds()).not.toContain(unread);
    // Again: the first read's time stays.
    expect((await t.call(admin.token, 'POST', `/v1/notifications/${unread}/read`)).json().readAt).toBe(readAt);
    expect((await t.call(admin.token, 'POST', `/v1/notifications/${already}/read`)).json().readAt).toBe(new Date(base + 40 * 60_000).toISOString());

    const read = (await t.call(admin.token, 'GET', '/v1/notifications?unread=false&limit=100')).json().data.map((n: { id: string }) => n.id);
    expect(read).toEqual(expect.arrayContaining([unread, already]));

    // Another user's notification, an unknown id and a malformed one are all 404; an API key is 403.
    const theirs = await insert(userOf(t.demo, 'viewer').id, ws, 32);
    for (const id of [theirs, 'ntf_00000000000000000000000000', 'nope']) {
      const refused = await t.call(admin.token, 'POST', `/v1/notifications/${id}/read`);
      expect(refused.statusCode, id).toBe(404);
    }
    expect((await t.call(userOf(t.demo, 'viewer').token, 'GET', '/v1/notifications?unread=true')).json().data.map((n: { id: string }) => n.id)).toContain(theirs);
    expect((await t.call(t.demo.workspaces[0].apiKey, 'POST', `/v1/notifications/${unread}/read`)).statusCode).toBe(403);
    expect((await t.call(admin.token, 'GET', '/v1/notifications?unread=maybe')).statusCode).toBe(400);
  });

  it('needs a personal access token, and no workspace', async () => {
    const key = await t.call(t.demo.workspaces[0].apiKey, 'GET', '/v1/notifications');
    expect(key.statusCode).toBe(403);
    expect(key.json().error.code).toBe('FORBIDDEN');
    expect((await t.call(null, 'GET', '/v1/notifications')).statusCode).toBe(401);
    const owner = userOf(t.demo, 'owner').token;
    expect((await t.call(owner, 'GET', '/v1/notifications', undefined, { 'service-workspace-id': 'wsp_whatever' })).statusCode).toBe(200);
    expect((await t.call(owner, 'GET', `/v1/workspaces/${t.demo.workspaces[0].id}/notifications`)).statusCode).toBe(404);
    expect((await t.call(owner, 'GET', '/v1/notifications?limit=0')).statusCode).toBe(400);
  });
});
