/**
 * The subscription patterns that match an event type: `product.created` is matched by itself and by
 * the prefix pattern `product.*` (and `order.item.added` by `order.item.*` and `order.*`).
 */
export function subscriptionPatterns(type: string): string[] {
  const parts = type.split('.');
  const patterns = [type];
  for (let i = parts.length - 1; i >= 1; i--) patterns.push(`${parts.slice(0, i).join('.')}.*`);
  return patterns;
}
