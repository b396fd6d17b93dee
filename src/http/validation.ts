import AjvModule from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaValidationError } from 'fastify/types/schema.js';
import type { ErrorDetail } from './errors.js';

const Ajv = AjvModule.default ?? AjvModule;
const addFormats = (addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule;

function makeAjv(coerceTypes: boolean) {
  const ajv = new Ajv({ coerceTypes, useDefaults: true, removeAdditional: false, allErrors: false, strict: false });
  (addFormats as unknown as (a: unknown) => void)(ajv);
  return ajv;
}

/**
 * JSON bodies are checked strictly (no coercion, unknown fields refused); query strings, path
 * parameters and headers arrive as text and are converted per their schema. A repeated query
 * parameter arrives as an array and so fails a string schema.
 */
const bodyAjv = makeAjv(false);
const textAjv = makeAjv(true);

export function compileValidator({ schema, httpPart }: { schema: object; httpPart?: string }) {
  return (httpPart === 'body' ? bodyAjv : textAjv).compile(schema);
}

const PART_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/** Turns Ajv's errors into the envelope's `details`, naming unknown fields outright. */
export function describeValidationErrors(errors: FastifySchemaValidationError[], context: string): { message: string; details: ErrorDetail[] } {
  const part = PART_NAMES[context] ?? context;
  const details = errors.map((e) => {
    const at = e.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : '';
    const params = e.params as Record<string, unknown>;
    if (e.keyword === 'additionalProperties') {
      const field = [at, params.additionalProperty].filter(Boolean).join('.');
      return { path: `${part}.${field}`, message: `unknown field "${field}"` };
    }
    if (e.keyword === 'required') {
      const field = [at, params.missingProperty].filter(Boolean).join('.');
      return { path: `${part}.${field}`, message: `"${field}" is required` };
    }
    return { path: at ? `${part}.${at}` : part, message: e.message ?? 'is invalid' };
  });
  const first = details[0];
  return { message: first ? `Invalid ${part}: ${first.path}: ${first.message}.` : `Invalid ${part}.`, details };
}
