import AjvModule from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaValidationError } from 'fastify/types/schema.js';

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

type Validate = ((data: unknown) => boolean) & { errors?: FastifySchemaValidationError[] | null };

/**
 * A route part's validator, compiled on its first request rather than when Fastify sets the
 * routes up, so that a start does not wait for the schemas of routes many services never call.
 * The warm-up's requests compile the busiest before the port opens.
 */
export function compileValidator({ schema, httpPart }: { schema: object; httpPart?: string }): Validate {
  let validate: Validate | undefined;
  const checked: Validate = (data) => {
    validate ??= httpPart === 'body' ? (bodyAjv.compile(schema) as Validate) : decimalIntegers(schema, textAjv.compile(schema) as Validate);
    const valid = validate(data);
    checked.errors = validate.errors;
    return valid;
  };
  return checked;
}

/**
 * Coercion turns any string JavaScript reads as a number into one, so `limit=0x10` or `1e1` would
 * pass as 16 or 10. Integer parameters must be written as plain decimals before they are coerced.
 */
function decimalIntegers(schema: object, validate: Validate): Validate {
  const properties = (schema as { properties?: Record<string, { type?: string }> }).properties ?? {};
  const integers = Object.keys(properties).filter((name) => properties[name].type === 'integer');
  if (integers.length === 0) return validate;
  const checked: Validate = (data) => {
    for (const name of integers) {
      const value = (data as Record<string, unknown> | null)?.[name];
      if (typeof value === 'string' && !/^-?[0-9]+$/.test(value)) {
        checked.errors = [{ instancePath: `/${name}`, schemaPath: `#/properties/${name}/type`, keyword: 'decimal', params: { type: 'integer' }, message: 'must be a decimal integer' }];
        return false;
      }
    }
    const valid = validate(data);
    checked.errors = validate.errors as FastifySchemaValidationError[] | null | undefined;
    return valid;
  };
  return checked;
}
