import type { EventType } from './log/catalog.js';
import { AUTO_DISABLED_EVENT } from './delivery/auto-disable.js';

/** An endpoint whose attempts all fail for a while (webhooks/alerts/): a notification and an event. */
export const FAILING_EVENT = 'webhook.endpoint.failing' satisfies EventType;
/** A failing endpoint that delivers again: a notification and an event. */
export const RECOVERED_EVENT = 'webhook.endpoint.recovered' satisfies EventType;
/** The notice of an endpoint one failed delivery from auto-disable: a notification, no event. */
export const DISABLING_NOTICE = 'webhook.endpoint.disabling';
/** One notice for the alerts of a workspace held in a window (digest). */
export const DIGEST_NOTICE = 'webhook.endpoint.digest';

/**
 * Every notification type a user can receive (GET /v1/notifications/types): what `type` of a
 * notification and of its push message may be. A new kind of notification is one more entry here.
 */
export const NOTIFICATION_CATALOG = [
  {
    type: AUTO_DISABLED_EVENT,
    description:
      'A webhook endpoint of a workspace where you can read webhooks was disabled after 5 consecutive failed deliveries; re-enable it once its receiver is fixed.',
  },
  {
    type: FAILING_EVENT,
    description:
      'Every attempt to a webhook endpoint of a workspace where you can read webhooks has failed for a while: what fails, since when and how many deliveries wait.',
  },
  {
    type: DISABLING_NOTICE,
    description: 'A failing webhook endpoint is one failed delivery from being disabled.',
  },
  {
    type: RECOVERED_EVENT,
    description: 'A failing webhook endpoint delivers again.',
  },
  {
    type: DIGEST_NOTICE,
    description: 'Many webhook endpoints of one workspace changed at once: one notice counts those not told one by one.',
  },
] as const satisfies readonly { type: string; description: string }[];
