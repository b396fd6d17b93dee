import type { SecretBox } from '../../lib/secretbox.js';

/** An endpoint's extra headers as sent, and as the delivery log keeps them (values redacted). */
export interface ExtraHeaders {
  sent: Record<string, string>;
  logged: Record<string, string>;
}

/** Header sets opened per sealed value: endpoints are few beside their deliveries (bounded, cleared when full). */
const MAX_OPENED = 1000;

/** Kept per master key, so a process never mixes what two keys opened. */
const opened = new WeakMap<SecretBox, Map<string, ExtraHeaders>>();

/**
 * An endpoint's extra headers (headers_enc), decrypted and parsed once and then reused by every
 * delivery to it; a changed set is another sealed value, so nothing stale is ever sent. Throws when
 * the value does not open with this key.
 */
export function extraHeaders(box: SecretBox, sealed: string): ExtraHeaders {
  let sets = opened.get(box);
  if (!sets) opened.set(box, (sets = new Map()));
  let set = sets.get(sealed);
  if (set === undefined) {
    const sent = JSON.parse(box.decryptOnce(sealed)) as Record<string, string>;
    set = { sent, logged: redactHeaders(sent) };
    if (sets.size >= MAX_OPENED) sets.clear();
    sets.set(sealed, set);
  }
  return set;
}

/** What an extra header's value is shown as, where only its name may be seen. */
export const REDACTED = '[redacted]';

/** The same names, every value replaced by REDACTED. */
export function redactHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(headers)) out[name] = REDACTED;
  return out;
}
