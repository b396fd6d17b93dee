import { Type } from '@sinclair/typebox';
import { PRINTABLE_ASCII } from '../validation-messages.js';

/** The request header, as clients write it. */
export const IDEMPOTENCY_KEY = 'Idempotency-Key';
/** The response header of a replay. */
export const IDEMPOTENT_REPLAYED = 'Idempotent-Replayed';

/**
 * 1-255 printable ASCII characters (a UUID is a good key). Validated with the route's other
 * headers, so a bad key is a 400 VALIDATION naming `header.idempotency-key`, and nothing runs.
 */
export const IdempotencyKey = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: PRINTABLE_ASCII,
  description:
    'Makes the POST safe to retry: a request with the same key (1-255 printable ASCII characters, e.g. a UUID) within 24 hours ' +
    'gets the first successful response again, byte for byte, with `Idempotent-Replayed: true`, and changes nothing. Scoped to the ' +
    'workspace and the credential\'s user or key. The same key with another method, path or body is 422 IDEMPOTENCY_MISMATCH; ' +
    'while the first request is running, 409 IDEMPOTENCY_IN_PROGRESS. Error responses are not stored. See docs/idempotency.md.',
  examples: ['5f8e2a4c-1b9d-4e7f-a3c6-0d2b8e9f1a7c'],
});

export const IdempotentReplayed = {
  description: '`true` when this response is the stored one of an earlier request with the same Idempotency-Key (POST only).',
  schema: { type: 'string', enum: ['true'] },
};
