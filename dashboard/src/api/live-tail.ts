import { useEffect, useRef, useState } from 'react';
import type { Event } from '@svc/sdk';
import { useApp } from './app-state';
import { SvcError } from './client';
import { SseParser } from './sse';

export type TailState = 'connecting' | 'live' | 'reconnecting' | 'paused' | 'stopped';

/** How many events the page keeps: the newest, the older ones dropped. */
export const TAIL_LIMIT = 200;

const wait = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

/**
 * The workspace's events as they happen, from GET /v1/events/stream. EventSource cannot send an
 * Authorization header, and the credential must never be in a URL, so the stream is read with
 * fetch (through the SDK's client, which sends the token as a header) and parsed here. A dropped
 * connection is taken up again after 0.5 s, 1 s, 2 s ... up to 10 s, with Last-Event-ID: nothing
 * missed, nothing twice. Pausing ends the connection; resuming continues after the last event
 * received. A refusal (400 for a type outside the catalog, 403) stops until the filter changes.
 * Leaving the page (unmounting) ends the stream.
 */
export function useLiveTail(type: string | undefined, running: boolean) {
  const { client } = useApp();
  const [events, setEvents] = useState<Event[]>([]);
  const [received, setReceived] = useState(0);
  const [state, setState] = useState<TailState>('connecting');
  const [error, setError] = useState<unknown>(null);
  const lastId = useRef<string | null>(null);
  const followed = useRef(type);

  useEffect(() => {
    // Another filter starts afresh, from now.
    if (followed.current !== type) {
      followed.current = type;
      lastId.current = null;
      setEvents([]);
      setReceived(0);
    }
    if (!running) {
      setState('paused');
      return;
    }
    const abort = new AbortController();
    const signal = abort.signal;
    void (async () => {
      let failures = 0;
      setState('connecting');
      while (!signal.aborted) {
        try {
          const { response, error: body } = await client.raw.GET('/v1/events/stream', {
            params: {
              query: type ? { type: type as never } : {},
              header: lastId.current ? { 'last-event-id': lastId.current } : {},
            },
            parseAs: 'stream',
            signal,
          });
          if (!response.ok) {
            const refused = SvcError.fromResponse(response, body);
            setError(refused);
            // 429 and 503 are passing; anything else would be refused again the same way.
            if (response.status !== 429 && response.status !== 503) return setState('stopped');
            await wait((refused.retryAfter ?? 1) * 1000, signal);
            continue;
          }
          setState('live');
          setError(null);
          failures = 0;
          const parser = new SseParser();
          const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            const fresh: Event[] = [];
            for (const message of parser.push(value)) {
              lastId.current = message.id;
              fresh.unshift(JSON.parse(message.data) as Event);
            }
            if (fresh.length) {
              setEvents((list) => [...fresh, ...list].slice(0, TAIL_LIMIT));
              setReceived((n) => n + fresh.length);
            }
          }
          // The server ended the stream (it is stopping): connect again.
        } catch (caught) {
          if (signal.aborted) return;
          setError(caught);
        }
        if (signal.aborted) return;
        setState('reconnecting');
        await wait(Math.min(500 * 2 ** failures++, 10_000), signal);
      }
    })();
    return () => abort.abort();
  }, [client, type, running]);

  return { events, received, state, error, clear: () => setEvents([]) };
}
