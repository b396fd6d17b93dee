import { Type, type Static } from '@sinclair/typebox';
import { EXAMPLE_EMAIL, exampleId } from '../http/examples.js';
import type { FastifyInstance } from 'fastify';
import { findUser } from './store.js';
import type { CredentialCache } from '../http/auth/cache.js';
import type { Db } from '../db/db.js';
import { ApiError, forbidden } from '../http/errors.js';
import type { Clock } from '../lib/clock.js';
import { toIso } from '../lib/iso.js';
import { CODE_PATTERN, endSession, isSessionToken, redeemSignInCode } from './sign-in-store.js';

const EXAMPLE_CODE = 'Zq3vR8kT1mW6yB0nC4xF7hJ2pL5sD9gA3eU6iO1rK8t';
const SessionCreate = Type.Object(
  { code: Type.String({ pattern: CODE_PATTERN, description: 'The code of a sign-in link (the part after #code=).', examples: [EXAMPLE_CODE] }) },
  { additionalProperties: false },
);

const Session = Type.Object({
  token: Type.String({
    description: 'A personal access token (svc_pat_...) for this session: send it as Authorization: Bearer. Returned this once.',
    examples: ['svc_pat_8Hk2Lp5Qw9Zx3Cv7Bn1Mr4Ty6Ud0Fg2AS7kQ3'],
  }),
  tokenId: Type.String({ description: 'pat_... of the session token.', examples: [exampleId('pat')] }),
  expiresAt: Type.String({ format: 'date-time', description: 'When the session token stops working (12 hours after sign-in).' }),
  user: Type.Object({ id: Type.String({ examples: [exampleId('usr')] }), email: Type.String({ examples: [EXAMPLE_EMAIL] }), name: Type.String({ examples: ['Ada Lovelace'] }) }),
});

const SessionEnded = Type.Object({ id: Type.String({ description: 'pat_... of the revoked session token.', examples: [exampleId('pat')] }), revoked: Type.Literal(true) });

/**
 * The dashboard's sign-in (docs/dashboard.md#sign-in-the-session-and-sign-out): a one-time code from `svc admin dashboard-link` or
 * `npm start` is exchanged for a session token, and signing out revokes that token.
 */
/** What the sign-in routes use of the service. */
export type DashboardDeps = { db: Db; clock: Clock; credentials: Pick<CredentialCache, 'forget'> };

export function dashboardRoutes(app: FastifyInstance, ctx: DashboardDeps): void {
  app.post<{ Body: Static<typeof SessionCreate> }>('/dashboard/sessions', {
    config: { auth: { scope: 'none' } },
    schema: {
      tags: ['Dashboard'],
      operationId: 'createDashboardSession',
      summary: 'Exchange a one-time sign-in code for a session token (no credential needed)',
      security: [],
      body: SessionCreate,
      response: { 201: Session },
    },
    handler: async (request, reply) => {
      const session = await redeemSignInCode(ctx.db, request.body.code, ctx.clock.now());
      if (!session) {
        // A 401 counts against the address like a wrong token (http/ratelimit/hooks.ts): one that keeps
        // guessing is refused for a while.
        throw new ApiError('UNAUTHENTICATED', 'This sign-in link is unknown, used or expired: ask for a new one (svc admin dashboard-link --user USER).');
      }
      const user = (await findUser(ctx.db, session.userId))!;
      return reply
        .status(201)
        .header('cache-control', 'no-store')
        .send({ token: session.token, tokenId: session.tokenId, expiresAt: toIso(session.expiresAt), user: { id: user.id, email: user.email, name: user.name } });
    },
  });

  app.delete('/dashboard/sessions/current', {
    config: { auth: { scope: 'user' } },
    schema: {
      tags: ['Dashboard'],
      operationId: 'deleteDashboardSession',
      summary: 'Sign out: revoke the calling session token (only a token a sign-in link gave)',
      response: { 200: SessionEnded },
    },
    handler: async (request) => {
      const principal = request.principal!;
      if (principal.kind !== 'pat' || !(await isSessionToken(ctx.db, principal.credentialId))) {
        throw forbidden('Only a dashboard session token signs out this way; a personal access token of your own is revoked with svc admin revoke-token.');
      }
      await endSession(ctx.db, principal.credentialId, ctx.clock.now());
      // This process forgets it now; others do when the NOTIFY arrives.
      ctx.credentials.forget(principal.credentialId);
      return { id: principal.credentialId, revoked: true as const };
    },
  });
}
