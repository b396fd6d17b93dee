import type { SvcClient } from './client';

/**
 * Web Push in this browser (docs/notifications.md): a service worker (public/sw.js, served at
 * /dashboard/sw.js) shows the service's messages; PushManager.subscribe with the service's VAPID
 * key makes the subscription, which the API stores as one of the person's push devices.
 */

/** Why this browser cannot receive push messages, or null when it can. */
export function pushUnsupported(): string | null {
  if (!window.isSecureContext) return 'Push notifications need a secure page: open the dashboard over https (or on localhost).';
  if (!('serviceWorker' in navigator) || !('PushManager' in window) || !('Notification' in window)) {
    return 'This browser does not support push notifications (the Push API).';
  }
  return null;
}

/** The device id of this browser's subscription, as the API answered it (an id, not a secret). */
const DEVICE_KEY = 'svc.dashboard.pushDevice';

export const thisBrowsersDevice = (): string | null => localStorage.getItem(DEVICE_KEY);

function bytesOf(base64url: string): Uint8Array<ArrayBuffer> {
  const text = atob(base64url.replace(/-/g, '+').replace(/_/g, '/'));
  const bytes = new Uint8Array(new ArrayBuffer(text.length));
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return bytes;
}

function sameKey(key: ArrayBuffer | null | undefined, wanted: Uint8Array): boolean {
  if (!key || key.byteLength !== wanted.length) return false;
  const given = new Uint8Array(key);
  return given.every((byte, i) => byte === wanted[i]);
}

/** A name for the device list, e.g. "Firefox on Linux". */
function browserName(): string {
  const ua = navigator.userAgent;
  const browser = /Edg\//.test(ua) ? 'Edge' : /Firefox\//.test(ua) ? 'Firefox' : /Chrome\//.test(ua) ? 'Chrome' : /Safari\//.test(ua) ? 'Safari' : 'Browser';
  const system = /Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Windows/.test(ua) ? 'Windows' : /Mac OS X/.test(ua) ? 'macOS' : /Linux/.test(ua) ? 'Linux' : '';
  return system ? `${browser} on ${system}` : browser;
}

/**
 * Asks for permission, registers the service worker, subscribes with the service's key (again if
 * an earlier subscription used another key) and registers the subscription as a push device.
 */
export async function subscribeThisBrowser(client: SvcClient): Promise<void> {
  const permission = await Notification.requestPermission();
  if (permission !== 'granted') throw new Error("Notifications are blocked for this site: allow them in the browser's site settings, then try again.");
  await navigator.serviceWorker.register(`${import.meta.env.BASE_URL}sw.js`, { scope: import.meta.env.BASE_URL });
  const registration = await navigator.serviceWorker.ready;
  const key = bytesOf((await client.GET('/v1/notifications/push-key')).publicKey);
  let subscription = await registration.pushManager.getSubscription();
  if (subscription && !sameKey(subscription.options.applicationServerKey, key)) {
    await subscription.unsubscribe();
    subscription = null;
  }
  try {
    subscription ??= await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
  } catch (error) {
    // Chrome refuses in a private (incognito) window, and says nothing more that a page could test.
    const why = error instanceof Error ? error.message : String(error);
    throw new Error(`The browser refused to subscribe (${why}). A private or incognito window cannot receive push notifications.`);
  }
  const { endpoint, keys } = subscription.toJSON();
  if (!endpoint || !keys?.p256dh || !keys.auth) throw new Error('The browser gave a subscription without its keys: push notifications cannot be encrypted for it.');
  const device = await client.POST('/v1/me/push-devices', { body: { endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth }, name: browserName() } });
  localStorage.setItem(DEVICE_KEY, device.id);
}
