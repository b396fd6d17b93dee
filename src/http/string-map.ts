import { Type, type SchemaOptions, type TString } from '@sinclair/typebox';

/**
 * An object of string values under any keys (metadata, header sets). Not
 * `Type.Record(Type.String(), ...)`: that is `patternProperties: { '^(.*)$': ... }`, and `.` matches
 * no line break, so a key holding one escaped the value's schema on the way in (any value was
 * stored) and was left out of answers on the way out.
 */
export function StringMap(value: TString = Type.String(), options: SchemaOptions = {}) {
  return Type.Unsafe<Record<string, string>>({ ...options, type: 'object', additionalProperties: value });
}

/** The `metadata` of a resource: the one limit set for every resource that carries one. */
export const Metadata = StringMap(Type.String({ maxLength: 500 }), {
  maxProperties: 50,
  propertyNames: { minLength: 1, maxLength: 40 },
  description: 'Up to 50 string keys (1-40 characters) with string values (up to 500 characters).',
  examples: [{ sku: 'ESP-1KG', roast: 'medium' }],
});
