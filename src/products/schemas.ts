import { Type, type Static } from '@sinclair/typebox';
import { ListOf } from '../http/list.js';
import { Metadata, StringMap } from '../http/string-map.js';

const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));

export function isCurrency(code: string): boolean {
  return CURRENCIES.has(code);
}

export const Price = Type.Object(
  {
    amount: Type.Integer({ minimum: 0, maximum: 999_999_999_999, description: 'Integer amount in minor units (cents).' }),
    currency: Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217 code, upper case (USD, EUR, JPY).' }),
  },
  { additionalProperties: false },
);

export const Product = Type.Object(
  {
    id: Type.String({ description: 'prd_...' }),
    name: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    price: Type.Union([Price, Type.Null()]),
    active: Type.Boolean(),
    metadata: StringMap(),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { $id: 'Product' },
);

const fields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.Union([Type.String({ maxLength: 2000 }), Type.Null()]),
  price: Type.Union([Price, Type.Null()]),
  active: Type.Boolean(),
  metadata: Metadata,
};

export const ProductCreate = Type.Object(
  {
    name: fields.name,
    description: Type.Optional(fields.description),
    price: Type.Optional(fields.price),
    active: Type.Optional(fields.active),
    metadata: Type.Optional(fields.metadata),
  },
  { additionalProperties: false },
);

export const ProductUpdate = Type.Partial(Type.Object(fields), {
  additionalProperties: false,
  minProperties: 1,
  description: 'Fields to change; metadata replaces the whole map; null clears description or price.',
});

export const ProductList = ListOf(Type.Ref('Product'), 'Products of the workspace, newest first.');

export const Deleted = Type.Object({ id: Type.String(), deleted: Type.Literal(true) });

export type ProductCreateInput = Static<typeof ProductCreate>;
export type ProductUpdateInput = Static<typeof ProductUpdate>;
