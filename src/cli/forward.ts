import { sign } from '../engine/delivery/sign.js';
import type { StreamedEvent } from './event-source.js';

/** How long the local server has to answer a forwarded event. */
const FORWARD_TIMEOUT_MS = 10_000;

/** What became of one forwarded event. */
export interface Forwarded {
  url: string;
  status: number | null;
  error: string | null;
  durationMs: number;
}

/** POSTs an event to a local URL, signed per Standard Webhooks with `secret`, as a delivery is. */
export async function forward(url: string, secret: string, event: StreamedEvent, stop: AbortSignal): Promise<Forwarded> {
  const timestamp = Math.floor(Date.now() / 1000);
  const started = performance.now();
  const took = () => Math.round(performance.now() - started);
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': 'svc-listen/1.0',
        'webhook-id': event.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': sign([secret], event.id, timestamp, event.data),
      },
      body: event.data,
      redirect: 'manual',
      signal: AbortSignal.any([stop, AbortSignal.timeout(FORWARD_TIMEOUT_MS)]),
    });
    await response.arrayBuffer().catch(() => {});
    return { url, status: response.status, error: null, durationMs: took() };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause;
    const name = (error as Error).name === 'TimeoutError' ? `no answer within ${FORWARD_TIMEOUT_MS / 1000} s` : (cause?.code ?? (error as Error).message);
    return { url, status: null, error: name, durationMs: took() };
  }
}
