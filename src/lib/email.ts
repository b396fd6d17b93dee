/**
 * An e-mail address as people type them: a local part and a domain of dot-separated labels with a
 * top-level one, no spaces, at most 254 characters (RFC 5321's limit for a path). Quoted local
 * parts and address literals, which RFC 5322 allows but nobody signs up with, are refused.
 */
const EMAIL = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}$/;

export function isEmail(text: string): boolean {
  return text.length <= 254 && EMAIL.test(text) && !text.startsWith('.') && !text.includes('..') && !text.includes('.@');
}
