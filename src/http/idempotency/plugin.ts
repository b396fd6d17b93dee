import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Db, ScopedTransaction } from '../../db/db.js';
import type { Clock } from '../../lib/clock.js';
import type { SecretBox } from '../../lib/secretbox.js';
import { ApiError } from '../errors.js';
import { withHook } from '../route-hooks.js';
import { IDEMPOTENT_REPLAYED } from './header.js';
import { expiredBefore, findResponse, keyScope, lockNumber, saveResponse, tryLock, type StoredResponse } from './store.js';

/** What idempotency keys use. */
export interface IdempotencyDeps {
  db: Db;
  clock: Clock;
  /** Stored responses are encrypted (they may hold a secret shown once). */
  secrets: SecretBox;
}

/**
 * Idempotency keys on every POST under /v1 (docs/idempotency.md).
 *
 * A POST with `Idempotency-Key` runs in one transaction (db/scope.ts) that every statement made for
 * it joins: the handler's stores, the outbox's events and deliveries. Before the handler, that
 * transaction takes the key's lock and looks for a stored response: found, it is replayed (or the
 * request refused as a mismatch) and nothing runs. Once the handler has answered with a success,
 * the response is stored in the same transaction, which then commits: the change and the response
 * a retry will get commit together or not at all. Any other answer rolls everything back and
 * stores nothing, so a request refused (400, 404, 409, ...) can be fixed and sent again with its key.
 */

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: Keyed | null;
  }
}

/** A keyed request that is running: its transaction, and what is stored when it succeeds. */
interface Keyed {
  tx: ScopedTransaction;
  scope: string;
  key: string;
  requestHash: string;
  /** Its entry in the process's set of running keys. */
  held: string;
  settled: boolean;
}

type Start = { kind: 'run'; tx: ScopedTransaction } | { kind: 'replay'; stored: StoredResponse } | { kind: 'refuse'; error: ApiError };

const inProgress = () =>
  new ApiError('IDEMPOTENCY_IN_PROGRESS', 'A request with this Idempotency-Key is still running: retry after it has finished to get its response.');
const mismatch = () =>
  new ApiError(
    'IDEMPOTENCY_MISMATCH',
    'This Idempotency-Key was used in the last 24 hours for a request with another method, path or body: use a new key for a new request.',
  );

/** Keys belong to the workspace the request acts in (none for user routes) and to the credential's user, or the API key. */
function scopeOf(request: FastifyRequest): string | null {
  const principal = request.principal;
  if (!principal) return null;
  return keyScope(request.workspace?.id ?? null, principal.kind === 'pat' ? principal.userId : principal.credentialId);
}

/** What a retry must repeat: method, path and body (as parsed JSON: spacing does not count, field order does). */
function fingerprint(request: FastifyRequest): string {
  return createHash('sha256')
    .update(`${request.method} ${request.url}\n`)
    .update(JSON.stringify(request.body ?? null))
    .digest('hex');
}

/** Opens the request's transaction, takes the key, and decides: run the handler, replay, or refuse. */
async function start(deps: IdempotencyDeps, scope: string, key: string, requestHash: string): Promise<Start> {
  const tx = await deps.db.openScope();
  try {
    // Another process running the same key holds this lock (this process's own are in `running`).
    if (!(await tryLock(tx, lockNumber(scope, key)))) {
      await tx.rollback();
      return { kind: 'refuse', error: inProgress() };
    }
    const stored = await findResponse(tx, deps.secrets, scope, key, expiredBefore(deps.clock.now()));
    if (!stored) return { kind: 'run', tx };
    await tx.rollback();
    return stored.requestHash === requestHash ? { kind: 'replay', stored } : { kind: 'refuse', error: mismatch() };
  } catch (error) {
    await tx.rollback().catch(() => {});
    throw error;
  }
}

/** The stored form of a success's payload; null for a payload that is not text (none of the API's). */
function payloadText(payload: unknown): string | null {
  if (typeof payload === 'string') return payload;
  if (Buffer.isBuffer(payload)) return payload.toString('utf8');
  if (payload === undefined || payload === null) return '';
  return null;
}

/** Stores a success with its change and commits both; rolls back anything else. */
async function finish(deps: IdempotencyDeps, keyed: Keyed, reply: FastifyReply, payload: unknown): Promise<void> {
  const body = payloadText(payload);
  if (reply.statusCode < 200 || reply.statusCode >= 300 || body === null) {
    await keyed.tx.rollback();
    if (body === null) throw new Error('a response that is not text cannot be stored for an idempotency key');
    return;
  }
  try {
    const contentType = String(reply.getHeader('content-type') ?? 'application/json; charset=utf-8');
    await saveResponse(keyed.tx, deps.secrets, keyed.scope, keyed.key, { requestHash: keyed.requestHash, status: reply.statusCode, contentType, body }, deps.clock.now());
  } catch (error) {
    await keyed.tx.rollback().catch(() => {});
    throw error;
  }
  // A failed commit (the database lost on the way) is a 503 through the error handler: the client
  // retries with its key, and gets the stored response if the commit did happen after all.
  await keyed.tx.commit();
}

type Hook = (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => void;
type SendHook = (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: Error | null, payload?: unknown) => void) => void;

const isPost = (route: RouteOptions) => [route.method].flat().some((m) => m.toUpperCase() === 'POST');

export function registerIdempotency(app: FastifyInstance, deps: IdempotencyDeps): void {
  /** Keys running in this process: a second request with one is refused at once, not after waiting for the first's row lock. */
  const running = new Set<string>();
  app.decorateRequest('idempotency', null);

  const release = (keyed: Keyed) => running.delete(keyed.held);

  // Last before the handler, so that the handler runs inside the transaction's scope.
  const before: Hook = (request, reply, done) => {
    const key = request.headers['idempotency-key'];
    const scope = scopeOf(request);
    if (typeof key !== 'string' || scope === null) return done();
    const held = `${scope}\n${key}`;
    if (running.has(held)) return done(inProgress());
    running.add(held);
    const requestHash = fingerprint(request);
    start(deps, scope, key, requestHash).then(
      (outcome) => {
        if (outcome.kind === 'run') {
          request.idempotency = { tx: outcome.tx, scope, key, requestHash, held, settled: false };
          return outcome.tx.run(() => done());
        }
        running.delete(held);
        if (outcome.kind === 'refuse') return done(outcome.error);
        const { status, contentType, body } = outcome.stored;
        void reply.status(status).header('content-type', contentType).header(IDEMPOTENT_REPLAYED, 'true').send(body);
      },
      (error: Error) => {
        running.delete(held);
        done(error);
      },
    );
  };

  const send: SendHook = (request, reply, payload, done) => {
    const keyed = request.idempotency;
    if (!keyed || keyed.settled) return done(null, payload);
    keyed.settled = true;
    finish(deps, keyed, reply, payload).then(
      () => {
        release(keyed);
        done(null, payload);
      },
      (error: Error) => {
        release(keyed);
        done(error);
      },
    );
  };

  // Should a response go out without passing onSend, the transaction still ends.
  const after: Hook = (request, _reply, done) => {
    const keyed = request.idempotency;
    if (!keyed || keyed.settled) return done();
    keyed.settled = true;
    keyed.tx.rollback().catch(() => {}).finally(() => {
      release(keyed);
      done();
    });
  };

  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/v1/') || !isPost(route)) return;
    route.preHandler = withHook(route.preHandler as Hook | Hook[] | undefined, before) as typeof route.preHandler;
    route.onSend = withHook(route.onSend as SendHook | SendHook[] | undefined, send) as typeof route.onSend;
    route.onResponse = withHook(route.onResponse as Hook | Hook[] | undefined, after) as typeof route.onResponse;
  });
}
