import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSignInCode, SESSION_TTL_MS, SIGN_IN_CODE_TTL_MS } from '../src/account/sign-in-store.js';
import { hashToken } from '../src/lib/tokens.js';
import { ManualClock, startTestApp, userOf, type TestApp } from './helpers/app.js';
import { expectError, ok } from './helpers/expect.js';

/** The dashboard's one-time sign-in links, the session tokens they give, and signing out. */
describe('dashboard sign-in', () => {
  let t: TestApp;
  const clock = new ManualClock(Date.parse('2026-05-01T08:00:00.000Z'));

  beforeAll(async () => {
    t = await startTestApp({ clock, config: { rateLimitUnauthenticated: 5 } });
  });
  afterAll(() => t.close());

  const redeem = (code: unknown) => t.call(null, 'POST', '/v1/dashboard/sessions', { code });
  const linkFor = async (role: 'owner' | 'viewer' = 'owner') => (await createSignInCode(t.ctx.db, userOf(t.demo, role).id, clock.now())).code;

  it('exchanges a code once for a session token of its user, which works and expires after 12 hours', async () => {
    const owner = userOf(t.demo, 'owner');
    const code = await linkFor();
    const res = await redeem(code);
    const session = ok(res, 201);
    expect(res.headers['cache-control']).toBe('no-store');
    // No credential's limit applies to this call: it sends no rate-limit headers of its own.
    expect(res.headers['ratelimit']).toBeUndefined();
    expect(session).toEqual({
      token: expect.stringMatching(/^svc_pat_(?!test_)/),
      tokenId: expect.stringMatching(/^pat_/),
      expiresAt: new Date(clock.now().getTime() + SESSION_TTL_MS).toISOString(),
      user: { id: owner.id, email: owner.email, name: owner.name },
    });
    const me = ok(await t.call(session.token, 'GET', '/v1/me'));
    expect(me).toMatchObject({ user: { id: owner.id }, credential: { type: 'personal_access_token', id: session.tokenId } });

    // Single use: the same code again is refused, and so is it after the first one was used.
    expect(expectError(await redeem(code), 401, 'UNAUTHENTICATED').message).toContain('unknown, used or expired');

    clock.advance(SESSION_TTL_MS);
    expectError(await t.call(session.token, 'GET', '/v1/me'), 401, 'UNAUTHENTICATED');
  });

  it('keeps only a hash of the code, and refuses a code past its 10 minutes', async () => {
    const code = await linkFor();
    const rows = await t.ctx.db.query<{ code_hash: string }>('SELECT code_hash FROM dashboard_sign_ins');
    expect(rows.map((r) => r.code_hash)).toContain(hashToken(code));
    expect(JSON.stringify(rows)).not.toContain(code);

    clock.advance(SIGN_IN_CODE_TTL_MS);
    expectError(await redeem(code), 401, 'UNAUTHENTICATED');
    const fresh = await linkFor();
    clock.advance(SIGN_IN_CODE_TTL_MS - 1);
    ok(await redeem(fresh), 201);
  });

  it('refuses malformed codes with 400 and changes nothing; unknown ones count against the address until 429', async () => {
    for (const bad of ['', 'x'.repeat(44), 'a b'.padEnd(43, 'c'), 42, null]) expectError(await redeem(bad), 400, 'VALIDATION');
    expectError(await t.call(null, 'POST', '/v1/dashboard/sessions', { code: 'A'.repeat(43), extra: 1 }), 400, 'VALIDATION');

    const limit = t.ctx.config.rateLimitUnauthenticated;
    for (let i = 0; i < limit; i++) expectError(await redeem(`${i}`.padEnd(43, 'Z')), 401, 'UNAUTHENTICATED');
    const refused = await redeem(await linkFor());
    expectError(refused, 429, 'RATE_LIMITED');
    expect(refused.headers['retry-after']).toBeDefined();
    clock.advance(61_000);
    ok(await redeem(await linkFor()), 201);
  });

  it('signs out by revoking the session token; other credentials cannot use the route', async () => {
    const session = ok(await redeem(await linkFor('viewer')), 201);
    const ended = ok(await t.call(session.token, 'DELETE', '/v1/dashboard/sessions/current'));
    expect(ended).toEqual({ id: session.tokenId, revoked: true });
    expectError(await t.call(session.token, 'GET', '/v1/me'), 401, 'UNAUTHENTICATED');

    // A personal access token made otherwise stays valid: signing out of a pasted token only forgets it in the browser.
    const pat = userOf(t.demo, 'owner').token;
    expectError(await t.call(pat, 'DELETE', '/v1/dashboard/sessions/current'), 403, 'FORBIDDEN');
    ok(await t.call(pat, 'GET', '/v1/me'));
    expectError(await t.call(t.demo.workspaces[0].apiKey, 'DELETE', '/v1/dashboard/sessions/current'), 403, 'FORBIDDEN');
    expectError(await t.call(null, 'DELETE', '/v1/dashboard/sessions/current'), 401, 'UNAUTHENTICATED');
  });

  it('documents both operations, the exchange with no credential', async () => {
    const doc = ok(await t.call(null, 'GET', '/openapi.json'));
    const create = doc.paths['/v1/dashboard/sessions'].post;
    expect(create).toMatchObject({ operationId: 'createDashboardSession', tags: ['Dashboard'], security: [] });
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '429']));
    expect(create.responses['201'].headers).not.toHaveProperty('RateLimit');
    expect(create.responses).not.toHaveProperty('403');
    expect(doc.paths['/v1/dashboard/sessions/current'].delete).toMatchObject({ operationId: 'deleteDashboardSession', tags: ['Dashboard'] });
    expect(doc.paths['/v1/dashboard/sessions/current'].delete.responses).toHaveProperty('403');
  });
});
