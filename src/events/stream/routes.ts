import { Type, type Static } from '@sinclair/typebox';
import { exampleId } from '../../http/examples.js';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authenticate, resolveWorkspace, type AuthDeps } from '../../http/auth/plugin.js';
import { ApiError, validation } from '../../http/errors.js';
import { WorkspaceHeader, type Mount } from '../../http/mount.js';
import { isId } from '../../lib/ids.js';
import { EVENT_TYPES } from '../../engine/log/catalog.js';
import { subscriptionPatterns } from '../../engine/log/patterns.js';
import type { EventHub } from './hub.js';

const PERMISSION = 'workspace:events:read';
const read = { scope: 'workspace', permission: PERMISSION } as const;

/** How long a client such as EventSource waits before reconnecting (the `retry` field). */
const RETRY_MS = 1_000;

/** The prefix patterns of the catalog (`product.*`, `webhook.*`, `webhook.endpoint.*`). */
const PREFIXES = [...new Set(EVENT_TYPES.flatMap((type) => subscriptionPatterns(type).slice(1)))].sort();

/** The types a filter lets through: the type itself, or every catalog type under a prefix pattern. */
export function typesOf(filter: string | undefined): Set<string> | null {
  if (filter === undefined) return null;
  return new Set(EVENT_TYPES.filter((type) => subscriptionPatterns(type).includes(filter)));
}

export const EventStreamQuery = Type.Object(
  {
    type: Type.Optional(
      Type.Unsafe<string>({
        type: 'string',
        enum: [...EVENT_TYPES, ...PREFIXES],
        description: 'Only events of this type: a type of the catalog, or a prefix pattern such as product.* for every type under it.',
      }),
    ),
    after: Type.Optional(
      Type.String({
        maxLength: 100,
        description: 'Start right after this event (evt_...), from the event log. The Last-Event-ID header, when sent, takes its place.',
        examples: [exampleId('evt')],
      }),
    ),
  },
  { additionalProperties: false },
);

const StreamHeaders = Type.Object({
  ...WorkspaceHeader.properties,
  'last-event-id': Type.Optional(
    Type.String({
      maxLength: 100,
      description: 'The id of the last event received (evt_...): the stream resumes right after it. Clients such as EventSource send it when they reconnect.',
      examples: [exampleId('evt')],
    }),
  ),
});

/** What the stream routes use of the service: the live streams, their keep-alive, and what checking the credential again needs. */
export type EventStreamDeps = AuthDeps & { eventStreams: Pick<EventHub, 'placeAfter' | 'open'>; config: { streamKeepAliveMs: number } };

const STREAM_DESCRIPTION = [
  'A live stream of the workspace\'s events as Server-Sent Events (`text/event-stream`). Each event is',
  'a message of two fields: `id:` the event id and `data:` the event\'s body, byte for byte as',
  '`GET /events/{eventId}` serves it and webhooks deliver it. Lines starting with `:` are comments: one',
  'is sent every 15 seconds (SVC_STREAM_KEEPALIVE) so that idle connections stay open.',
  '',
  'Events arrive in the order in which they committed, each once: an event is sent after every event',
  'that committed before it, whatever its time says and whichever process wrote it. Without a resume',
  'point the stream begins now; with `Last-Event-ID` (or `after`) it first replays from the log every',
  'event after that one, then goes on live, so a client that reconnects with the last id it received',
  'misses nothing and receives nothing twice. An id that names no event of the workspace is a 400',
  '(see docs/events-stream.md).',
  '',
  'The stream counts as one request against the rate limit. It ends when the server stops or the',
  'credential is revoked; reconnect with `Last-Event-ID`.',
].join('\n');

export function eventStreamRoutes(app: FastifyInstance, ctx: EventStreamDeps, mount: Mount): void {
  app.get<{ Querystring: Static<typeof EventStreamQuery>; Headers: Static<typeof StreamHeaders> }>('/events/stream', {
    config: { auth: read },
    schema: {
      tags: ['Events'],
      operationId: 'streamEvents',
      summary: 'Follow the events live (Server-Sent Events)',
      description: STREAM_DESCRIPTION,
      params: mount.params(),
      headers: StreamHeaders,
      querystring: EventStreamQuery,
      response: {
        200: {
          description: 'A stream of events, one `id:`/`data:` message each, with `:` comment lines to keep the connection open.',
          content: {
            'text/event-stream': {
              schema: Type.String({
                description: 'Server-Sent Events, e.g. `id: evt_...` then `data: {"id":"evt_...","type":"product.created",...}` then an empty line.',
                examples: [
                  `retry: 1000\n\nid: ${exampleId('evt')}\ndata: {"id":"${exampleId('evt')}","type":"product.created","created":"2026-11-25T14:03:07.123Z",` +
                    `"subject":{"id":"${exampleId('prd')}","type":"product","url":"/v1/products/${exampleId('prd')}"}}\n\n: keep-alive\n\n`,
                ],
              }),
            },
          },
        },
      },
    },
    handler: async (request, reply) => {
      // An empty Last-Event-ID is no resume point (EventSource sends none until it has an id).
      const header = request.headers['last-event-id'] || undefined;
      const resumeFrom = header ?? request.query.after;
      if (resumeFrom !== undefined && !isId('evt', resumeFrom)) {
        const path = header !== undefined ? 'header.last-event-id' : 'query.after';
        throw validation(`${path === 'query.after' ? 'after' : 'Last-Event-ID'} must be an event id (evt_...).`, [{ path, message: 'not an event id' }]);
      }
      const workspaceId = request.workspace!.id;
      const after = resumeFrom === undefined ? null : await ctx.eventStreams.placeAfter(workspaceId, resumeFrom);
      if (resumeFrom !== undefined && after === null) {
        const path = header !== undefined ? 'header.last-event-id' : 'query.after';
        throw validation(`${path === 'query.after' ? 'after' : 'Last-Event-ID'} names no event of this workspace.`, [{ path, message: 'no such event' }]);
      }
      reply.header('content-type', 'text/event-stream; charset=utf-8').header('cache-control', 'no-cache, no-transform').header('x-accel-buffering', 'no');
      // HEAD gets the answer's head only: no stream is kept open for a body that would not be sent.
      if (request.method === 'HEAD') return reply.send('');
      const stream = await ctx.eventStreams.open({
        workspaceId,
        types: typesOf(request.query.type),
        after,
        keepAliveMs: ctx.config.streamKeepAliveMs,
        stillAllowed: () => stillAllowed(ctx, request, workspaceId),
      });
      // The client went away, or the answer ended: either way the stream is over.
      reply.raw.on('close', () => stream.close());
      void stream.out.retry(RETRY_MS);
      void stream.run();
      return reply.send(stream.out.body);
    },
  });
}

/** The stream's credential, checked again: still valid, still bound to the workspace, still allowed to read its events. */
async function stillAllowed(ctx: EventStreamDeps, request: FastifyRequest, workspaceId: string): Promise<boolean> {
  try {
    const principal = await authenticate(request, ctx);
    const workspace = await resolveWorkspace(request, principal, ctx);
    return workspace.id === workspaceId && workspace.permissions.includes(PERMISSION);
  } catch (error) {
    if (error instanceof ApiError && (error.code === 'UNAUTHENTICATED' || error.code === 'FORBIDDEN')) return false;
    throw error;
  }
}
