import { AUTO_DISABLED_EVENT } from '../webhooks/endpoints/auto-disable.js';

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
] as const satisfies readonly { type: string; description: string }[];
