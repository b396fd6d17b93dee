// The dashboard's service worker (served at /dashboard/sw.js, scope /dashboard/): it shows the
// service's Web Push messages ({id, type, workspaceId, message, url}: docs/notifications.md) and
// opens the page a message names when it is clicked. It caches nothing and sees no credential.

/** The page to open: the message's own if it is a page of this dashboard, else the notifications page. */
function pageOf(url) {
  const fallback = new URL('notifications', self.registration.scope).href;
  try {
    const target = new URL(url, self.registration.scope);
    return target.origin === self.location.origin && target.href.startsWith(self.registration.scope) ? target.href : fallback;
  } catch {
    return fallback;
  }
}

// The tab that registered it is served by it at once, so a click can bring that tab forward. It
// has no fetch handler: requests are never touched.
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('push', (event) => {
  let message = null;
  try {
    message = event.data ? event.data.json() : null;
  } catch {
    message = null;
  }
  // A subscription made with userVisibleOnly must show something for every push, even an unreadable one.
  const body = message && typeof message.message === 'string' ? message.message : 'Something needs your attention: see the notifications page.';
  const options = { body, tag: message && typeof message.id === 'string' ? message.id : undefined, data: { url: pageOf(message && message.url) } };
  event.waitUntil(self.registration.showNotification('svc', options));
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const url = (event.notification.data && event.notification.data.url) || pageOf('');
  event.waitUntil(
    (async () => {
      // A dashboard tab already open keeps its session (held by that tab): it is brought forward there.
      const tabs = await self.clients.matchAll({ type: 'window' });
      const tab = tabs.find((client) => client.url.startsWith(self.registration.scope));
      if (tab) {
        await tab.focus();
        return tab.navigate(url);
      }
      return self.clients.openWindow(url);
    })(),
  );
});
