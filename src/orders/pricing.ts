import { validation, type ErrorDetail } from '../http/errors.js';
import type { OrderedProduct } from './products.js';
import type { LineItemView } from './schemas.js';

/** Amounts are JSON numbers: every amount and the total stay exact integers in JavaScript. */
export const MAX_AMOUNT = Number.MAX_SAFE_INTEGER;

export interface PricedLines {
  currency: string;
  amountTotal: number;
  lineItems: LineItemView[];
}

/**
 * Snapshots each line's product (name and unit price) and sums the amounts. Every product must be
 * one of `products` (those of the workspace, not deleted), active and priced, all in one currency;
 * every line that is not is named in the 400, `lineItems[i]` by its place in the request.
 */
export function priceLineItems(lines: { productId: string; quantity: number }[], products: Map<string, OrderedProduct>): PricedLines {
  const problems: { index: number; field: string; message: string }[] = [];
  const lineItems: LineItemView[] = [];
  let currency: { code: string; index: number } | null = null;
  let total = 0n;
  lines.forEach(({ productId, quantity }, index) => {
    const product = products.get(productId);
    const refuse = (message: string, field = 'productId') => problems.push({ index, field, message });
    if (!product) return refuse(`no product ${productId} in this workspace`);
    if (!product.active) return refuse(`product ${productId} is not active`);
    if (product.price_amount === null || product.price_currency === null) return refuse(`product ${productId} has no price`);
    if (currency && product.price_currency !== currency.code) {
      return refuse(`product ${productId} is priced in ${product.price_currency}, lineItems[${currency.index}] in ${currency.code}: an order has one currency`);
    }
    currency ??= { code: product.price_currency, index };
    const unitAmount = Number(product.price_amount);
    const amount = BigInt(unitAmount) * BigInt(quantity);
    if (amount > BigInt(MAX_AMOUNT)) return refuse(`the amount ${amount} is over the maximum of ${MAX_AMOUNT}`, 'quantity');
    total += amount;
    lineItems.push({ productId, name: product.name, unitAmount, quantity, amount: Number(amount) });
  });
  if (problems.length > 0) {
    const [first] = problems;
    const more = problems.length > 1 ? ` (${problems.length} line items refused, see details)` : '';
    const details: ErrorDetail[] = problems.map((p) => ({ path: `body.lineItems.${p.index}.${p.field}`, message: p.message }));
    throw validation(`Invalid line item lineItems[${first.index}].${first.field}: ${first.message}${more}.`, details);
  }
  if (total > BigInt(MAX_AMOUNT)) {
    throw validation(`Invalid lineItems: the total ${total} is over the maximum of ${MAX_AMOUNT}.`, [{ path: 'body.lineItems', message: 'total over the maximum' }]);
  }
  return { currency: currency!.code, amountTotal: Number(total), lineItems };
}
