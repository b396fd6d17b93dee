import { Type, type Static } from '@sinclair/typebox';
import { exampleId } from '../../http/examples.js';
import { ListOf } from '../../http/list.js';
import { StringMap } from '../../http/string-map.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const HeaderMap = (description: string, example: Record<string, string>) => Type.Union([StringMap(Type.String(), { examples: [example] }), Type.Null()], { description });

export const DeliveryAttempt = Type.Object(
  {
    attempt: Type.Integer({ description: 'Its number: 1 for the first attempt of the delivery.', examples: [1] }),
    startedAt: Type.String({ format: 'date-time', description: 'When the request was started (also its webhook-timestamp).' }),
    responseStatus: Nullable(Type.Integer({ description: 'HTTP status of the answer; null without one (refused, reset, timed out before the headers).', examples: [200] })),
    responseTimeMs: Nullable(Type.Integer({ description: 'From the start of the request to the end of the answer or the failure, in milliseconds.', examples: [142] })),
    error: Nullable(Type.String({ description: 'Short error of a failed attempt; null for a success.', examples: ['HTTP 503'] })),
    requestHeaders: HeaderMap(
      'The headers sent, without secrets: the signing secret never appears; webhook-signature (an HMAC of this request, which tells nothing of the secret) is kept so a receiver can be checked against it; credential-like names are left out. Null when no request was built.',
      { 'content-type': 'application/json', 'webhook-id': exampleId('whd'), 'webhook-timestamp': '1795615387', 'webhook-signature': 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=' },
    ),
    responseHeaders: HeaderMap('Headers of the answer; null without one.', { 'content-type': 'application/json' }),
    responseBody: Nullable(Type.String({ description: 'Body of the answer, its first 64 KiB at most; null without one.', examples: ['{"received":true}'] })),
  },
  { $id: 'WebhookDeliveryAttempt', description: 'One HTTP attempt of a delivery.' },
);

export const AttemptList = ListOf(Type.Ref('WebhookDeliveryAttempt'), "The delivery's attempts, newest first.");


/** The statistics windows and their series buckets: 12 of 5 minutes, 24 of an hour, 28 of 6 hours. */
export const STATS_WINDOWS = {
  '1h': { windowMs: 60 * 60_000, bucketMs: 5 * 60_000 },
  '24h': { windowMs: 24 * 60 * 60_000, bucketMs: 60 * 60_000 },
  '7d': { windowMs: 7 * 24 * 60 * 60_000, bucketMs: 6 * 60 * 60_000 },
} as const;
export type StatsWindow = keyof typeof STATS_WINDOWS;

export const StatsQuery = Type.Object(
  {
    window: Type.Optional(
      Type.Union(
        (Object.keys(STATS_WINDOWS) as StatsWindow[]).map((w) => Type.Literal(w)),
        { default: '24h', description: 'The period: the last hour (5-minute buckets), day (hourly) or week (6-hour buckets); 24h by default.' },
      ),
    ),
  },
  { additionalProperties: false },
);
export type StatsQueryInput = Static<typeof StatsQuery>;

const Count = (description: string, example = 120) => Type.Integer({ minimum: 0, description, examples: [example] });
const Latency = (description: string, example: number) => Nullable(Type.Integer({ description, examples: [example] }));

export const EndpointStats = Type.Object(
  {
    window: Type.Union((Object.keys(STATS_WINDOWS) as StatsWindow[]).map((w) => Type.Literal(w))),
    attempts: Count('HTTP attempts started in the window (every retry counts).'),
    successes: Count('Attempts answered with a 2xx in full and in time.', 117),
    failures: Count('Every other attempt: other statuses, time-outs, refused or broken connections.', 3),
    successRate: Nullable(Type.Number({ minimum: 0, maximum: 1, description: 'successes / attempts; null without attempts.', examples: [0.975] })),
    latencyMs: Type.Object(
      {
        p50: Latency('Median response time of the attempts, failures included; null without attempts.', 84),
        p95: Latency('95th percentile.', 310),
        p99: Latency('99th percentile.', 920),
      },
      {
        description:
          'Percentiles of responseTimeMs (observed values, percentile_disc). Exact for the last few minutes; older attempts count at a rounded time: in the 1h window to two significant digits (exact below 100 ms, to 10 ms below 1 s, to 100 ms below 10 s, to 1 s above), in the 24h and 7d windows within 1/32 (3.2%) of the time (exact below 32 ms).',
      },
    ),
    series: Type.Array(
      Type.Object({
        start: Type.String({ format: 'date-time', description: 'Start of the bucket; it ends where the next one starts.' }),
        successes: Count('Successful attempts started in the bucket.', 10),
        failures: Count('Failed attempts started in the bucket.', 0),
      }),
      {
        description:
          'Every bucket of the window, oldest first, empty ones included. Buckets are aligned to UTC multiples of their size; the last one is the current one, still filling, and the counts above add up the buckets shown.',
      },
    ),
  },
  { $id: 'WebhookEndpointStats', description: "An endpoint's delivery statistics over a recent window, from its attempts." },
);
