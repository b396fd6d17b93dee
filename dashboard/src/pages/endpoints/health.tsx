import type { WebhookEndpoint } from '@svc/sdk';

/** Active, paused (by a person) or auto-disabled (after 5 consecutive failed deliveries, or a 410 Gone). */
export function endpointState(endpoint: WebhookEndpoint): 'active' | 'paused' | 'auto-disabled' {
  if (endpoint.active) return 'active';
  return endpoint.disabledReason === 'auto' || endpoint.disabledReason === 'gone' ? 'auto-disabled' : 'paused';
}

export const STATE_HELP: Record<ReturnType<typeof endpointState>, string> = {
  active: 'Receives deliveries.',
  paused: 'Paused by a person: events get disabled deliveries, sent after re-enabling only by a replay.',
  'auto-disabled': 'Disabled after 5 consecutive failed deliveries, or when the receiver answered 410 Gone. Fix the receiver, then re-enable it and replay what it missed.',
};

/** `disabledReason` in words. */
export const DISABLED_REASONS: Record<NonNullable<WebhookEndpoint['disabledReason']>, string> = {
  manual: 'paused by a person',
  auto: 'disabled after 5 consecutive failed deliveries',
  gone: 'disabled when the receiver answered 410 Gone',
};
