/**
 * Answers that several pages share (the caller's workspaces, the event-type catalog), kept in the
 * tab's sessionStorage for a while: moving between pages, typing an address or opening a page in a
 * new tab (which copies the tab's sessionStorage) does not ask for them again. A reload asks afresh,
 * as people expect of it. Nothing kept here is a credential; signing in or out clears it.
 */
const PREFIX = 'svc.dashboard.cache.';

interface Kept<T> {
  at: number;
  value: T;
}

export function readShared<T>(key: string, maxAgeMs: number): T | undefined {
  try {
    const text = sessionStorage.getItem(PREFIX + key);
    if (!text) return undefined;
    const kept = JSON.parse(text) as Kept<T>;
    const age = Date.now() - kept.at;
    return age >= 0 && age < maxAgeMs ? kept.value : undefined;
  } catch {
    return undefined;
  }
}

export function keepShared<T>(key: string, value: T): void {
  try {
    sessionStorage.setItem(PREFIX + key, JSON.stringify({ at: Date.now(), value } satisfies Kept<T>));
  } catch {
    // A full or refused storage only costs a request next time.
  }
}

export function clearShared(): void {
  for (const key of Object.keys(sessionStorage)) if (key.startsWith(PREFIX)) sessionStorage.removeItem(key);
}

/** The kept answer while it is younger than `maxAgeMs`, else `load`'s (then kept). */
export async function shared<T>(key: string, maxAgeMs: number, load: () => Promise<T>): Promise<T> {
  const kept = readShared<T>(key, maxAgeMs);
  if (kept !== undefined) return kept;
  const value = await load();
  keepShared(key, value);
  return value;
}

function reloaded(): boolean {
  try {
    return (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming | undefined)?.type === 'reload';
  } catch {
    return false;
  }
}

if (reloaded()) clearShared();
