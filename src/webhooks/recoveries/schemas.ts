import { Type, type Static } from '@sinclair/typebox';
import { exampleId } from '../../http/examples.js';
import { ListOf } from '../../http/list.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

/** The statuses a recovery replays: deliveries that will never be sent unless replayed. */
export const RECOVERABLE = ['failed', 'disabled'] as const;
export type Recoverable = (typeof RECOVERABLE)[number];

const Instant = (description: string) => Type.String({ format: 'date-time', description });

export const RecoverBody = Type.Object(
  {
    since: Instant('Replay deliveries created at or after this instant (ISO 8601 with offset).'),
    until: Type.Optional(Instant('Replay deliveries created at or before this instant (default: now; a later instant counts as now).')),
    statuses: Type.Optional(
      Type.Array(Type.Union(RECOVERABLE.map((s) => Type.Literal(s))), {
        minItems: 1,
        maxItems: 2,
        uniqueItems: true,
        description: 'Which deliveries to replay: failed (gave up after every attempt), disabled (never sent, the endpoint was inactive). Default: both.',
      }),
    ),
    dryRun: Type.Optional(Type.Boolean({ description: 'Only count what would be replayed; change nothing (default false).' })),
  },
  { additionalProperties: false },
);
export type RecoverBodyInput = Static<typeof RecoverBody>;

const windowFields = {
  endpointId: Type.String({ description: 'whe_...', examples: [exampleId('whe')] }),
  since: Instant('Start of the window (inclusive).'),
  until: Instant('End of the window (inclusive).'),
  statuses: Type.Array(Type.Union(RECOVERABLE.map((s) => Type.Literal(s)))),
};

export const RecoveryDryRun = Type.Object(
  {
    object: Type.Literal('webhook_recovery'),
    dryRun: Type.Literal(true),
    ...windowFields,
    count: Type.Integer({ description: 'Deliveries a recovery made now would replay (those already replayed are not counted).', examples: [42] }),
  },
  { description: 'What a recovery would replay; nothing was changed.' },
);

export const WebhookRecovery = Type.Object(
  {
    object: Type.Literal('webhook_recovery'),
    id: Type.String({ description: 'whr_...', examples: [exampleId('whr')] }),
    ...windowFields,
    status: Type.Union([Type.Literal('running'), Type.Literal('completed'), Type.Literal('failed')], {
      description: 'running: replays are being queued in the background; completed; failed: stopped early, see error.',
    }),
    count: Type.Integer({ description: 'Deliveries to replay when the recovery was made: progress is replayed / count.', examples: [42] }),
    replayed: Type.Integer({ description: 'Replays queued so far.', examples: [40] }),
    skipped: Type.Integer({
      description: 'Matching deliveries passed over: already replayed (a replay pending, delivered or itself in the window), or their body is gone.',
      examples: [2],
    }),
    error: Nullable(Type.String({ description: 'Why a failed recovery stopped (the endpoint was paused or deleted meanwhile).', examples: ['The webhook endpoint is paused.'] })),
    createdAt: Type.String({ format: 'date-time' }),
    completedAt: Nullable(Type.String({ format: 'date-time', description: 'When it completed or failed; null while running.' })),
  },
  { $id: 'WebhookRecovery', description: 'A bulk recovery of an endpoint\'s failed or disabled deliveries, and its progress.' },
);

export const RecoveryList = ListOf(Type.Ref('WebhookRecovery'), "The endpoint's recoveries, newest first.");
