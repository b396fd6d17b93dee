import { Type, type Static } from '@sinclair/typebox';
import { CreatedRange } from '../http/created-range.js';
import { ExpandParam } from '../http/expand.js';
import { ListOf } from '../http/list.js';
import { PageQuery } from '../http/pagination.js';
import { Metadata, StringMap } from '../http/string-map.js';
import { Amount, Currency } from '../lib/money.js';
import { EXAMPLE_EMAIL, EXAMPLE_PRODUCT_NAME, exampleId } from '../http/examples.js';
import { ORDER_STATUSES } from './states.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);
const Time = (description: string) => Type.String({ format: 'date-time', description });
const NullableTime = (description: string) => Nullable(Type.String({ format: 'date-time', description }));

export const MAX_LINE_ITEMS = 100;
export const MAX_QUANTITY = 10_000;

export const OrderStatus = Type.Union(
  ORDER_STATUSES.map((s) => Type.Literal(s)),
  { description: 'pending: created, not paid; paid; fulfilled: paid and shipped or delivered; canceled: never paid; refunded: paid, then refunded.' },
);

export const OrderLineItem = Type.Object(
  {
    productId: Type.String({ description: 'prd_... of the product; it may since have changed or been deleted.', examples: [exampleId('prd')] }),
    name: Type.String({ description: "The product's name when the order was created.", examples: [EXAMPLE_PRODUCT_NAME] }),
    unitAmount: Amount("The product's price when the order was created, in minor units."),
    quantity: Type.Integer({ minimum: 1, maximum: MAX_QUANTITY, examples: [2] }),
    amount: Amount('unitAmount × quantity, in minor units.', { examples: [4800] }),
  },
  { $id: 'OrderLineItem', description: 'A line of an order: a snapshot of its product taken at creation, which later product changes do not touch.' },
);

export type LineItemView = Static<typeof OrderLineItem>;

export const Order = Type.Object(
  {
    id: Type.String({ description: 'ord_...', examples: [exampleId('ord')] }),
    status: OrderStatus,
    currency: Currency('ISO 4217 code shared by every line item.'),
    amountTotal: Amount('Sum of the line items\' amounts, in minor units.', { examples: [4800] }),
    customerEmail: Nullable(Type.String({ examples: [EXAMPLE_EMAIL] })),
    metadata: StringMap(Type.String(), { examples: [{ channel: 'web' }] }),
    createdAt: Time('When the order was created.'),
    updatedAt: Time('When the order last changed: its status, metadata or customer e-mail.'),
    paidAt: NullableTime('When it was paid; null until then.'),
    fulfilledAt: NullableTime('When it was fulfilled; null until then.'),
    canceledAt: NullableTime('When it was canceled; null unless it was.'),
    refundedAt: NullableTime('When it was refunded; null unless it was.'),
    // Last, where the serialiser writes an optional field whatever its place.
    lineItems: Type.Optional(
      Type.Unsafe<LineItemView[]>(
        Type.Array(Type.Ref('OrderLineItem'), { description: 'Always in a single order; in a list only with expand=lineItems.' }),
      ),
    ),
  },
  { $id: 'Order', description: 'An order of products of the workspace. Orders are never deleted.' },
);

export type OrderView = Static<typeof Order>;

const CustomerEmail = Type.String({ format: 'email', maxLength: 254, description: 'The customer\'s e-mail address.', examples: [EXAMPLE_EMAIL] });

export const OrderCreate = Type.Object(
  {
    lineItems: Type.Array(
      Type.Object(
        {
          productId: Type.String({ minLength: 1, maxLength: 100, description: 'prd_... of an active product of this workspace that has a price.', examples: [exampleId('prd')] }),
          quantity: Type.Integer({ minimum: 1, maximum: MAX_QUANTITY, examples: [2] }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: MAX_LINE_ITEMS, description: `1 to ${MAX_LINE_ITEMS} lines; every product priced in the same currency.` },
    ),
    customerEmail: Type.Optional(Nullable(CustomerEmail)),
    metadata: Type.Optional(Metadata),
  },
  { additionalProperties: false },
);

export const OrderUpdate = Type.Partial(Type.Object({ customerEmail: Nullable(CustomerEmail), metadata: Metadata }), {
  additionalProperties: false,
  minProperties: 1,
  description: 'Fields to change, in any status; metadata replaces the whole map; null clears customerEmail.',
});

export const ORDER_EXPANDS = ['lineItems'] as const;

export const OrderListQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(OrderStatus),
    ...CreatedRange,
    expand: ExpandParam(ORDER_EXPANDS),
  },
  { additionalProperties: false },
);

export const OrderList = ListOf(Type.Ref('Order'), 'Orders of the workspace, newest first; each carries lineItems only with expand=lineItems.');

export type OrderCreateInput = Static<typeof OrderCreate>;
export type OrderUpdateInput = Static<typeof OrderUpdate>;
export type OrderListQueryInput = Static<typeof OrderListQuery>;
