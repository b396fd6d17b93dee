import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../db/db.js';
import { validation } from '../../http/errors.js';
import type { ListContext } from '../../http/list.js';
import { WorkspaceHeader, type Mount } from '../../http/mount.js';
import { resource, type ResourceOptions } from '../../http/resource.js';
import type { Clock } from '../../lib/clock.js';
import { toIso } from '../../lib/iso.js';
import { endpointInactive } from '../endpoints/schemas.js';
import { findEndpoint } from '../endpoints/store.js';
import {
  RECOVERABLE,
  RecoverBody,
  RecoveryDryRun,
  RecoveryList,
  type RecoverBodyInput,
} from './schemas.js';
import type { RecoveryRunner } from './runner.js';
import { countRecoverable, createRecovery, findRecovery, listRecoveries, toRecoveryView, type RecoveryWindow } from './store.js';

const read = { scope: 'workspace', permission: 'workspace:developer:read' } as const;
const write = { scope: 'workspace', permission: 'workspace:developer:write' } as const;

/** A body instant as a Date; one the date-time format lets through but no engine can hold (23:59:60, year 0) is a 400. */
function instant(value: string, name: string): Date {
  const date = new Date(value);
  const year = date.getUTCFullYear();
  if (Number.isNaN(date.getTime()) || year < 1 || year > 9999) {
    throw validation(`Invalid body: ${name} is not a valid ISO 8601 date-time.`, [{ path: `body.${name}`, message: 'not a valid date-time' }]);
  }
  return date;
}

/** A retention in the unit a person would write it in. */
function days(ms: number): string {
  return ms % 86_400_000 === 0 ? `${ms / 86_400_000}d` : ms % 3_600_000 === 0 ? `${ms / 3_600_000}h` : `${ms} ms`;
}

/** The request's window: `until` defaults to (and is capped at) now; refused when reversed or longer than the retention. */
function windowOf(body: RecoverBodyInput, endpointId: string, now: Date, retentionMs: number): RecoveryWindow {
  const since = instant(body.since, 'since');
  const given = body.until === undefined ? undefined : instant(body.until, 'until');
  const until = given && given.getTime() < now.getTime() ? given : now;
  if (given && given.getTime() < since.getTime()) {
    throw validation('Invalid body: until is before since.', [{ path: 'body.until', message: 'must not be before since' }]);
  }
  if (since.getTime() > until.getTime()) {
    throw validation('Invalid body: since is in the future.', [{ path: 'body.since', message: 'must not be after now' }]);
  }
  if (retentionMs > 0 && until.getTime() - since.getTime() > retentionMs) {
    const message = `the window is longer than the retention (SVC_RETENTION, ${days(retentionMs)}): older deliveries are deleted`;
    throw validation(`Invalid body: ${message}.`, [{ path: 'body.since', message }]);
  }
  return { endpointId, since, until, statuses: body.statuses ?? [...RECOVERABLE] };
}

/** What the recovery routes use of the service. */
export type RecoveryDeps = ListContext & { db: Db; clock: Clock; config: ListContext['config'] & { retentionMs: number }; recoveries: Pick<RecoveryRunner, 'fitsInline' | 'runInline' | 'wake'> };

export function webhookRecoveryRoutes(app: FastifyInstance, deps: RecoveryDeps, mount: Mount): void {
  const { db, clock, recoveries } = deps;
  const common = { tag: 'Webhook deliveries', mount, headers: WorkspaceHeader, read, write, pages: deps } satisfies Partial<ResourceOptions>;
  const endpoints = resource(app, { ...common, path: '/webhooks/endpoints', item: { name: 'endpointId', prefix: 'whe', noun: 'webhook endpoint', exists: (owner, id) => findEndpoint(db, owner, id) } });
  const recovery = resource(app, { ...common, path: '/webhooks/recoveries', item: { name: 'recoveryId', prefix: 'whr', noun: 'webhook recovery' } });
  const Recovery = Type.Ref('WebhookRecovery');

  endpoints.action({
    path: '/recover',
    errors: ['ENDPOINT_INACTIVE'],
    operationId: 'recoverWebhookDeliveries',
    summary: "Replay an endpoint's failed and disabled deliveries of a time window, in the background (dryRun: count them)",
    body: RecoverBody,
    response: { 200: RecoveryDryRun, 202: Recovery },
    handle: async ({ owner, id, body, reply }) => {
      const now = clock.now();
      const endpoint = await findEndpoint(db, owner, id);
      if (!endpoint) return null;
      const window = windowOf(body, endpoint.id, now, deps.config.retentionMs);
      if (!endpoint.active) throw endpointInactive({ disabled_reason: endpoint.disabled_reason, deleted_at: null });
      const count = await countRecoverable(db, window);
      if (body.dryRun) {
        return reply.status(200).send({
          object: 'webhook_recovery',
          dryRun: true,
          endpointId: endpoint.id,
          since: toIso(window.since),
          until: toIso(window.until),
          statuses: window.statuses,
          count,
        });
      }
      let created = await createRecovery(db, owner, window, count, now);
      if (created.status === 'running' && recoveries.fitsInline(count)) {
        await recoveries.runInline(created.id);
        created = (await findRecovery(db, owner, created.id))!;
      } else if (created.status === 'running') {
        // The runner starts once the row is committed (at the end of the request's transaction, with an Idempotency-Key).
        db.afterCommit(() => recoveries.wake());
      }
      return reply.status(202).send(toRecoveryView(created));
    },
  });

  recovery.retrieve({
    operationId: 'getWebhookRecovery',
    summary: 'Retrieve a recovery and its progress (replayed of count; status completed once done)',
    response: Recovery,
    handle: ({ owner, id }) => findRecovery(db, owner, id),
    view: toRecoveryView,
  });

  endpoints.listOf({
    path: '/recoveries',
    operationId: 'listWebhookRecoveries',
    summary: "List an endpoint's recoveries, newest first",
    response: RecoveryList,
    list: 'webhook-recoveries',
    rows: ({ owner, id, cursor, limit }) => listRecoveries(db, owner, id, cursor, limit),
    view: toRecoveryView,
  });
}
