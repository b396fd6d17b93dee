import { Type, type IntegerOptions } from '@sinclair/typebox';

/**
 * The ISO 4217 currency codes this service accepts: those Node.js's ICU knows. Written as one
 * pattern, so that the document lists them, validation enforces them, and typed clients still see
 * a string.
 */
export const CURRENCIES: readonly string[] = Intl.supportedValuesOf('currency');
export const CURRENCY_PATTERN = `^(?:${CURRENCIES.join('|')})$`;

/** A currency code: one of CURRENCIES. */
export const Currency = (description: string) => Type.String({ pattern: CURRENCY_PATTERN, description, examples: ['EUR'] });

/** An amount in minor units (cents): an integer that may exceed 32 bits. */
export const Amount = (description: string, options: IntegerOptions = {}) => Type.Integer({ format: 'int64', description, examples: [2400], ...options });
