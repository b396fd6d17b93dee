import webpush from 'web-push';
import type { KeyPair } from './keys.js';
import type { Subscription } from './subscription.js';

/** A push service keeps an undelivered message this long (the browser may be offline): a day. */
export const PUSH_TTL_SECONDS = 86_400;

/**
 * A message must fit in one 4096-byte record of aes128gcm once encrypted (RFC 8291: 3993 bytes of
 * text at most); notification messages are sentences, and one past this is cut.
 */
const MAX_MESSAGE_CHARS = 1_000;

/** What a push message carries (docs/notifications.md): enough to show it and to open the page concerned. */
export interface PushPayload {
  id: string;
  type: string;
  workspaceId: string;
  message: string;
  url: string;
}

export function payloadOf(notification: { id: string; type: string; workspace_id: string; message: string }, publicUrl: string): PushPayload {
  const message = notification.message.length > MAX_MESSAGE_CHARS ? `${notification.message.slice(0, MAX_MESSAGE_CHARS - 1)}…` : notification.message;
  // The notifications page holds the notice and its link to what it concerns, in whichever workspace is open.
  return { id: notification.id, type: notification.type, workspaceId: notification.workspace_id, message, url: `${publicUrl}/dashboard/notifications` };
}

/** A Web Push request ready to send: the endpoint, its headers (VAPID Authorization included) and the encrypted body. */
export interface PushRequest {
  endpoint: string;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * Encrypts the payload for the subscription (RFC 8291, aes128gcm) and signs the request with the
 * VAPID key (RFC 8292) through web-push; sending is ours (transport.ts), through the SSRF guard.
 * The topic is the notification's id: a retry replaces a copy the push service still holds.
 */
export function pushRequest(subscription: Subscription, payload: PushPayload, keys: KeyPair, contact: string): PushRequest {
  const details = webpush.generateRequestDetails({ endpoint: subscription.endpoint, keys: { p256dh: subscription.p256dh, auth: subscription.auth } }, JSON.stringify(payload), {
    vapidDetails: { subject: contact, publicKey: keys.publicKey, privateKey: keys.privateKey },
    TTL: PUSH_TTL_SECONDS,
    contentEncoding: 'aes128gcm',
    urgency: 'high',
    topic: payload.id,
  });
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(details.headers)) headers[name.toLowerCase()] = String(value);
  return { endpoint: details.endpoint, headers, body: details.body as Buffer };
}
