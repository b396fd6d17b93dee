import { validation, type ErrorDetail } from '../../http/errors.js';
import { describePattern } from '../../http/validation-messages.js';
import type { SecretBox } from '../../lib/secretbox.js';
import { REDACTED, redactHeaders } from '../../engine/delivery/extra-headers.js';

export { REDACTED, redactHeaders };

/** Extra request headers an endpoint may carry at most. */
export const MAX_HEADERS = 20;
export const MAX_HEADER_NAME_LENGTH = 100;
export const MAX_HEADER_VALUE_LENGTH = 1000;

/** What a header's value is shown as where values are not shown (the attempts log, readers). */

/** An HTTP field name (RFC 9110 token). */
export const HEADER_NAME_PATTERN = describePattern(
  "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$",
  "is not a valid header name (1-100 letters, digits and !#$%&'*+.^_`|~-)",
);
const TOKEN = new RegExp(HEADER_NAME_PATTERN);

/**
 * Names an endpoint may not set: the ones the signature and the request's framing are made of
 * (`webhook-*`, content-type, content-length, host), `user-agent` (receivers and their firewalls
 * recognise the service by it), and hop-by-hop names, which describe one connection, not the
 * request (and some of which the HTTP client refuses outright: expect, upgrade, ...).
 */
const SET_BY_SERVICE = new Set(['content-type', 'content-length', 'host', 'user-agent']);
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'expect']);

/** Visible ASCII and spaces inside, no space at either end. */
export const HEADER_VALUE_PATTERN = describePattern(
  '^[\\x21-\\x7e](?:[\\x20-\\x7e]*[\\x21-\\x7e])?$',
  'must be printable ASCII characters, without spaces at either end',
);
const VALUE = new RegExp(HEADER_VALUE_PATTERN);

function reservedReason(name: string): string | null {
  if (SET_BY_SERVICE.has(name)) return `"${name}" is set by the service and cannot be sent as an extra header`;
  if (name.startsWith('webhook-')) return `"${name}": webhook-* headers carry the signature and are set by the service`;
  if (HOP_BY_HOP.has(name) || name.startsWith('proxy-')) return `"${name}" describes the connection, not the request (hop-by-hop), and cannot be sent as an extra header`;
  return null;
}

/**
 * Checks an endpoint's `headers` (the schema has checked the types): at most MAX_HEADERS, each name
 * an HTTP token that is not reserved, each value printable ASCII without spaces at either end.
 * Names are case-insensitive in HTTP, so they are kept in lower case and two spellings of one name
 * are refused. Every problem is named in `details`; returns the headers as they will be stored.
 */
export function checkHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  const details: ErrorDetail[] = [];
  const entries = Object.entries(headers);
  if (entries.length > MAX_HEADERS) details.push({ path: 'body.headers', message: `at most ${MAX_HEADERS} headers` });
  for (const [given, value] of entries) {
    const name = given.toLowerCase();
    const path = `body.headers.${given}`;
    if (given.length === 0 || given.length > MAX_HEADER_NAME_LENGTH || !TOKEN.test(given)) {
      details.push({ path, message: `"${given}" is not a valid header name (1-${MAX_HEADER_NAME_LENGTH} letters, digits and !#$%&'*+.^_\`|~-)` });
      continue;
    }
    const reserved = reservedReason(name);
    if (reserved) {
      details.push({ path, message: reserved });
      continue;
    }
    if (name in out) {
      details.push({ path, message: `"${given}" is given twice (header names are case-insensitive)` });
      continue;
    }
    if (value.length > MAX_HEADER_VALUE_LENGTH || !VALUE.test(value)) {
      details.push({ path, message: `the value of "${given}" must be 1-${MAX_HEADER_VALUE_LENGTH} printable ASCII characters, without spaces at either end` });
      continue;
    }
    out[name] = value;
  }
  if (details.length > 0) throw validation(`Invalid headers: ${details.map((d) => d.message).join('; ')}.`, details);
  return out;
}

/** The sealed form of an endpoint's headers; null for none. */
export function sealHeaders(box: SecretBox, headers: Record<string, string> | null): string | null {
  return headers === null || Object.keys(headers).length === 0 ? null : box.encrypt(JSON.stringify(headers));
}

/** An endpoint's headers in clear, for a view (not kept in the box's cache of signing secrets). */
export function openHeaders(box: SecretBox, sealed: string | null): Record<string, string> {
  return sealed === null ? {} : (JSON.parse(box.decryptOnce(sealed)) as Record<string, string>);
}

