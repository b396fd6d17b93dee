import { Type, type Static } from '@sinclair/typebox';
import { ListOf } from '../../http/list.js';
import { PageQuery } from '../../http/pagination.js';
import { StringMap } from '../../http/string-map.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const HeaderMap = (description: string) => Type.Union([StringMap(), Type.Null()], { description });

export const DeliveryAttempt = Type.Object(
  {
    attempt: Type.Integer({ description: 'Its number: 1 for the first attempt of the delivery.' }),
    startedAt: Type.String({ format: 'date-time', description: 'When the request was started (also its webhook-timestamp).' }),
    responseStatus: Nullable(Type.Integer({ description: 'HTTP status of the answer; null without one (refused, reset, timed out before the headers).' })),
    responseTimeMs: Nullable(Type.Integer({ description: 'From the start of the request to the end of the answer or the failure, in milliseconds.' })),
    error: Nullable(Type.String({ description: 'Short error of a failed attempt; null for a success.' })),
    requestHeaders: HeaderMap(
      'The headers sent, without secrets: the signing secret never appears; webhook-signature (an HMAC of this request, which tells nothing of the secret) is kept so a receiver can be checked against it; credential-like names are left out. Null when no request was built.',
    ),
    responseHeaders: HeaderMap('Headers of the answer; null without one.'),
    responseBody: Nullable(Type.String({ description: 'Body of the answer, its first 64 KiB at most; null without one.' })),
  },
  { $id: 'WebhookDeliveryAttempt', description: 'One HTTP attempt of a delivery.' },
);

export const AttemptList = ListOf(Type.Ref('WebhookDeliveryAttempt'), "The delivery's attempts, newest first.");

export const AttemptListQuery = Type.Object(PageQuery, { additionalProperties: false });
export type AttemptListQueryInput = Static<typeof AttemptListQuery>;
