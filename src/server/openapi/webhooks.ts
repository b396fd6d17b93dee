import { EVENT_CATALOG } from '../../engine/log/catalog.js';
import { eventSchemaName } from '../../events/schemas.js';

/** `webhook.endpoint.auto_disabled` → `webhookEndpointAutoDisabled`: a webhook's operationId stem. */
const camel = (type: string) => type.split(/[._]/).map((word, i) => (i === 0 ? word : word[0].toUpperCase() + word.slice(1))).join('');

/** The three Standard Webhooks headers of every delivery, as reusable parameters. */
export const WEBHOOK_HEADER_PARAMETERS = {
  WebhookId: {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description: 'Id of the delivery (whd_...). Retries of a delivery reuse it: process each id once.',
    schema: { type: 'string' },
  },
  WebhookTimestamp: {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description: 'Unix time in seconds when the request was signed. Reject a timestamp more than 5 minutes from your clock.',
    schema: { type: 'string', pattern: '^[0-9]+$' },
  },
  WebhookSignature: {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description:
      'Space-separated `v1,<base64 HMAC-SHA256>` values of `<webhook-id>.<webhook-timestamp>.<raw body>`, one per signing secret ' +
      '(two for 24 hours after a rotation). Accept the request when any value matches.',
    schema: { type: 'string' },
  },
};

const DELIVERY =
  'Sent as a POST to every active endpoint subscribed to this type, signed per ' +
  '[Standard Webhooks](https://www.standardwebhooks.com/). Verify the signature over the raw body before trusting it, answer 2xx within ' +
  '10 seconds, then fetch `subject.url` for the current state. See docs/receiving-webhooks.md.';

/**
 * The OpenAPI 3.1 `webhooks` section: one entry per catalog type, with its payload schema (a
 * component of the same name as in the API's responses) and the signature headers.
 */
export function webhooksSection(): Record<string, unknown> {
  const headers = Object.keys(WEBHOOK_HEADER_PARAMETERS).map((name) => ({ $ref: `#/components/parameters/${name}` }));
  return Object.fromEntries(
    EVENT_CATALOG.map(({ type, description }) => [
      type,
      {
        post: {
          operationId: `${camel(type)}Webhook`,
          summary: type,
          description: `${description}\n\n${DELIVERY}`,
          tags: ['Webhook events'],
          security: [],
          parameters: headers,
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { $ref: `#/components/schemas/${eventSchemaName(type)}` } } },
          },
          responses: {
            '2XX': { description: 'Any 2xx answer within 10 seconds acknowledges the delivery; its body is kept, truncated, in the delivery log.' },
            default: { description: 'Any other answer, or none within 10 seconds, is a failed attempt: it is retried on the schedule, then the delivery fails.' },
          },
        },
      },
    ]),
  );
}
