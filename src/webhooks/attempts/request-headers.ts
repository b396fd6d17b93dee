import { CONTENT_TYPE, USER_AGENT } from '../../engine/delivery/attempt.js';

/**
 * An attempt's request headers as the log shows them, in SQL over the attempts row `a`
 * (migrations/016): the standard set rebuilt from the row, its signature and the endpoint's own
 * headers as kept (values redacted); or, for an attempt written before 016 (no signature), the
 * headers as stored. No request made: NULL. jsonb orders keys by itself, so both read alike.
 * The rebuilt set is deliveryHeaders' (engine/attempt.ts), which the attempts tests compare with what
 * a receiver got.
 */
export function requestHeadersSql(a: string): string {
  return `CASE WHEN ${a}.request_signature IS NULL THEN ${a}.request_headers
            ELSE jsonb_build_object('content-type', '${CONTENT_TYPE}', 'user-agent', '${USER_AGENT}', 'webhook-id', ${a}.delivery_id,
                                    'webhook-timestamp', floor(extract(epoch FROM ${a}.started_at))::bigint::text,
                                    'webhook-signature', ${a}.request_signature)
                 || coalesce(${a}.request_headers, '{}'::jsonb)
          END`;
}
