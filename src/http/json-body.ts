import type { FastifyInstance } from 'fastify';
import { validation } from './errors.js';

const MAX_DEPTH = 32;

/**
 * A UTF-16 surrogate without its pair: `"\ud800"` is valid JSON but not Unicode text. PostgreSQL's
 * jsonb refuses it (a 500) and text columns receive U+FFFD instead (silently altered data).
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Refuses what JSON.parse accepts but the store cannot hold or that only costs us: NUL, deep nesting. */
function check(value: unknown, depth: number): void {
  if (depth > MAX_DEPTH) throw validation(`JSON nested deeper than ${MAX_DEPTH} levels.`);
  if (typeof value === 'string') {
    if (value.includes('\u0000')) throw validation('Strings must not contain NUL characters.');
    if (LONE_SURROGATE.test(value)) throw validation('Strings must be Unicode text: an unpaired surrogate escape (\\ud800-\\udfff) is not.');
  } else if (Array.isArray(value)) {
    for (const item of value) check(item, depth + 1);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key.includes('\u0000')) throw validation('Field names must not contain NUL characters.');
      if (LONE_SURROGATE.test(key)) throw validation('Field names must be Unicode text: an unpaired surrogate escape (\\ud800-\\udfff) is not.');
      check(item, depth + 1);
    }
  }
}

/** application/json only, parsed strictly; a body of another type is a 415 from Fastify itself. */
export function registerJsonParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body: Buffer, done) => {
    const text = body.toString('utf8');
    if (text.includes('\uFFFD') && !body.equals(Buffer.from(text, 'utf8'))) {
      return done(validation('Request body is not valid UTF-8.'), undefined);
    }
    // An empty body is no body: action routes (rotate-secret, replay) accept it; others fail validation.
    if (text.trim() === '') return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      return done(validation(`Request body is not valid JSON: ${(error as Error).message}`), undefined);
    }
    try {
      check(parsed, 0);
    } catch (error) {
      return done(error as Error, undefined);
    }
    done(null, parsed);
  });
}
