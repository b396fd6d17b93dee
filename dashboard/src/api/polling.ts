import { useEffect, useRef, useSyncExternalStore } from 'react';

const onVisibility = (listener: () => void) => {
  document.addEventListener('visibilitychange', listener);
  return () => document.removeEventListener('visibilitychange', listener);
};

/** Whether the tab is shown (not in the background, not minimised). */
export function useVisible(): boolean {
  return useSyncExternalStore(onVisibility, () => document.visibilityState === 'visible');
}

export interface PollingOptions {
  /** The first wait, and the wait after an answer that changed. */
  startMs: number;
  /** The longest wait, reached by doubling while the answers stay the same. */
  maxMs: number;
  enabled?: boolean;
}

/**
 * Looks again (`refresh`) after `startMs`, then, while the answers stay the same (`fingerprint`),
 * twice as long each time, up to `maxMs`; an answer that changed starts again from `startMs`. Nothing
 * is asked while the tab is hidden; shown again, it looks at once. `answer` is a new value for each
 * answer received (its data, or its error), undefined before the first.
 */
export function usePolling(refresh: () => void, answer: unknown, fingerprint: string, { startMs, maxMs, enabled = true }: PollingOptions): void {
  const visible = useVisible();
  const last = useRef<{ answer: unknown; fingerprint: string | null; delayMs: number; hidden: boolean }>({ answer: undefined, fingerprint: null, delayMs: startMs, hidden: false });
  useEffect(() => {
    const seen = last.current;
    if (!enabled || answer === undefined) return;
    if (!visible) {
      seen.hidden = true;
      return;
    }
    if (seen.hidden) {
      seen.hidden = false;
      refresh();
      return;
    }
    if (seen.answer !== answer) {
      seen.delayMs = seen.fingerprint === fingerprint ? Math.min(seen.delayMs * 2, maxMs) : startMs;
      seen.answer = answer;
      seen.fingerprint = fingerprint;
    }
    const timer = setTimeout(refresh, seen.delayMs);
    return () => clearTimeout(timer);
  }, [answer, fingerprint, visible, enabled, startMs, maxMs, refresh]);
}

/**
 * How many times `fingerprint` changed since its first value (undefined values are skipped): a
 * dependency that makes a part of the page follow another's changes without loading twice at first.
 */
export function useChangeCount(fingerprint: string | undefined): number {
  const seen = useRef<{ last: string | undefined; count: number }>({ last: undefined, count: 0 });
  if (fingerprint !== undefined && fingerprint !== seen.current.last) {
    if (seen.current.last !== undefined) seen.current.count++;
    seen.current.last = fingerprint;
  }
  return seen.current.count;
}
