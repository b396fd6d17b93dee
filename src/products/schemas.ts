import { Type, type Static } from '@sinclair/typebox';
import { ListOf } from '../http/list.js';
import { Metadata, StringMap } from '../http/string-map.js';
import { Amount, Currency } from '../lib/money.js';
import { EXAMPLE_PRODUCT_NAME, exampleId } from '../http/examples.js';

const DESCRIPTION = 'Single-origin beans from Huila, Colombia, roasted for espresso.';

export const Price = Type.Object(
  {
    amount: Amount('Integer amount in minor units (cents).', { minimum: 0, maximum: 999_999_999_999, examples: [2400] }),
    currency: Currency('ISO 4217 code, upper case (USD, EUR, JPY), of the ones the service accepts (the pattern lists them).'),
  },
  { additionalProperties: false },
);

export const Product = Type.Object(
  {
    id: Type.String({ description: 'prd_...', examples: [exampleId('prd')] }),
    name: Type.String({ examples: [EXAMPLE_PRODUCT_NAME] }),
    description: Type.Union([Type.String({ examples: [DESCRIPTION] }), Type.Null()]),
    price: Type.Union([Price, Type.Null()]),
    active: Type.Boolean(),
    metadata: StringMap(Type.String(), { examples: [{ sku: 'ESP-1KG', roast: 'medium' }] }),
    createdAt: Type.String({ format: 'date-time' }),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { $id: 'Product' },
);

const fields = {
  name: Type.String({ minLength: 1, maxLength: 200, examples: [EXAMPLE_PRODUCT_NAME] }),
  description: Type.Union([Type.String({ maxLength: 2000, examples: [DESCRIPTION] }), Type.Null()]),
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

export const Deleted = Type.Object({ id: Type.String({ examples: [exampleId('prd')] }), deleted: Type.Literal(true) });

export type ProductCreateInput = Static<typeof ProductCreate>;
export type ProductUpdateInput = Static<typeof ProductUpdate>;
