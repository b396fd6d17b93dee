import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../../context.js';
import { notFound, validation } from '../../http/errors.js';
import { pageUrls, requestCursor } from '../../http/list.js';
import { IdParam, WorkspaceHeader, type Mount } from '../../http/mount.js';
import { DEFAULT_LIMIT } from '../../http/pagination.js';
import { isId } from '../../lib/ids.js';
import { toIso } from '../../lib/iso.js';
import { endpointInactive } from '../endpoints/schemas.js';
import { findEndpoint } from '../endpoints/store.js';
import {
  RECOVERABLE,
  RecoverBody,
  RecoveryDryRun,
  RecoveryList,
  RecoveryListQuery,
  type RecoverBodyInput,
  type RecoveryListQueryInput,
} from './schemas.js';
import { countRecoverable, createRecovery, findRecovery, listRecoveries, toRecoveryView, type RecoveryWindow } from './store.js';

const read = { scope: 'workspace', permission: 'workspace:developer:read' } as const;
const write = { scope: 'workspace', permission: 'workspace:developer:write' } as const;
type EndpointParams = { Params: { endpointId: string } };

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

export function webhookRecoveryRoutes(app: FastifyInstance, ctx: AppContext, mount: Mount): void {
  const endpointParams = mount.params({ endpointId: IdParam('whe', 'Webhook endpoint id (whe_...).') });
  const recoveryParams = mount.params({ recoveryId: IdParam('whr', 'Webhook recovery id (whr_...).') });
  const common = { tags: ['Webhook deliveries'], headers: WorkspaceHeader };
  const Recovery = Type.Ref('WebhookRecovery');

  app.post<EndpointParams & { Body: RecoverBodyInput }>('/webhooks/endpoints/:endpointId/recover', {
    config: { auth: write, errors: ['ENDPOINT_INACTIVE'] },
    schema: {
      ...common,
      operationId: 'recoverWebhookDeliveries',
      summary: "Replay an endpoint's failed and disabled deliveries of a time window, in the background (dryRun: count them)",
      params: endpointParams,
      body: RecoverBody,
      response: { 200: RecoveryDryRun, 202: Recovery },
    },
    handler: async (request, reply: FastifyReply) => {
      const workspaceId = request.workspace!.id;
      const now = ctx.clock.now();
      const { endpointId } = request.params;
      const endpoint = isId('whe', endpointId) ? await findEndpoint(ctx.db, workspaceId, endpointId) : null;
      if (!endpoint) throw notFound('webhook endpoint');
      const window = windowOf(request.body, endpoint.id, now, ctx.config.retentionMs);
      if (!endpoint.active) throw endpointInactive({ disabled_reason: endpoint.disabled_reason, deleted_at: null });
      const count = await countRecoverable(ctx.db, window);
      if (request.body.dryRun) {
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
      let recovery = await createRecovery(ctx.db, workspaceId, window, count, now);
      if (recovery.status === 'running' && ctx.recoveries.fitsInline(count)) {
        await ctx.recoveries.runInline(recovery.id);
        recovery = (await findRecovery(ctx.db, workspaceId, recovery.id))!;
      } else if (recovery.status === 'running') {
        // The runner starts once the row is committed (at the end of the request's transaction, with an Idempotency-Key).
        ctx.db.afterCommit(() => ctx.recoveries.kick());
      }
      return reply.status(202).send(toRecoveryView(recovery));
    },
  });

  app.get<{ Params: { recoveryId: string } }>('/webhooks/recoveries/:recoveryId', {
    config: { auth: read },
    schema: {
      ...common,
      operationId: 'getWebhookRecovery',
      summary: 'Retrieve a recovery and its progress (replayed of count; status completed once done)',
      params: recoveryParams,
      response: { 200: Recovery },
    },
    handler: async (request) => {
      const { recoveryId } = request.params;
      const row = isId('whr', recoveryId) ? await findRecovery(ctx.db, request.workspace!.id, recoveryId) : null;
      if (!row) throw notFound('webhook recovery');
      return toRecoveryView(row);
    },
  });

  app.get<EndpointParams & { Querystring: RecoveryListQueryInput }>('/webhooks/endpoints/:endpointId/recoveries', {
    config: { auth: read },
    schema: {
      ...common,
      operationId: 'listWebhookRecoveries',
      summary: "List an endpoint's recoveries, newest first",
      params: endpointParams,
      querystring: RecoveryListQuery,
      response: { 200: RecoveryList },
    },
    handler: async (request) => {
      const { endpointId } = request.params;
      const { limit = DEFAULT_LIMIT, page } = request.query;
      const workspaceId = request.workspace!.id;
      if (!isId('whe', endpointId) || !(await findEndpoint(ctx.db, workspaceId, endpointId))) throw notFound('webhook endpoint');
      const binding = { list: 'webhook-recoveries', scope: `${workspaceId}/${endpointId}`, limit, filters: {} };
      const result = await listRecoveries(ctx.db, workspaceId, endpointId, requestCursor(ctx, page, binding), limit);
      return { data: result.rows.map(toRecoveryView), ...pageUrls(ctx, request, binding, result) };
    },
  });
}
