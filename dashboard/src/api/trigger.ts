import type { SvcClient } from './client';

/** One change a trigger made through the API, and the event it emitted. */
export interface Made {
  type: string;
  subjectId: string;
}

/** The permission each group of triggers needs: a trigger makes real changes as the person. */
export const TRIGGER_PERMISSIONS: Record<string, string> = { product: 'workspace:products:write', order: 'workspace:orders:write' };

const SAMPLE = { source: 'dashboard trigger' };

async function product(client: SvcClient, made: Made[]): Promise<string> {
  const created = await client.POST('/v1/products', { body: { name: 'Sample product', price: { amount: 1500, currency: 'EUR' }, metadata: SAMPLE } });
  made.push({ type: 'product.created', subjectId: created.id });
  return created.id;
}

async function order(client: SvcClient, made: Made[]): Promise<string> {
  const productId = await product(client, made);
  const created = await client.POST('/v1/orders', { body: { lineItems: [{ productId, quantity: 1 }], customerEmail: 'sample@example.com', metadata: SAMPLE } });
  made.push({ type: 'order.created', subjectId: created.id });
  return created.id;
}

type Step = 'pay' | 'fulfill' | 'cancel' | 'refund';
const STEP_EVENTS: Record<Step, string> = { pay: 'order.paid', fulfill: 'order.fulfilled', cancel: 'order.canceled', refund: 'order.refunded' };

async function moved(client: SvcClient, made: Made[], steps: Step[]): Promise<void> {
  const orderId = await order(client, made);
  for (const step of steps) {
    await client.POST(`/v1/orders/{orderId}/${step}`, { params: { path: { orderId } } });
    made.push({ type: STEP_EVENTS[step], subjectId: orderId });
  }
}

/**
 * How each event type is made happen for real, through the API, as Stripe's `stripe trigger` does:
 * with the sample records it needs first (a product for an order, an order to pay), whose own
 * events are emitted too. Types not here cannot be made at will: the test event has its own button,
 * and an auto-disable takes 5 failed deliveries.
 */
const RECIPES: Record<string, (client: SvcClient, made: Made[]) => Promise<unknown>> = {
  'product.created': product,
  'product.updated': async (client, made) => {
    const productId = await product(client, made);
    await client.PATCH('/v1/products/{productId}', { params: { path: { productId } }, body: { name: 'Sample product (renamed)' } });
    made.push({ type: 'product.updated', subjectId: productId });
  },
  'product.deleted': async (client, made) => {
    const productId = await product(client, made);
    await client.DELETE('/v1/products/{productId}', { params: { path: { productId } } });
    made.push({ type: 'product.deleted', subjectId: productId });
  },
  'order.created': order,
  'order.updated': async (client, made) => {
    const orderId = await order(client, made);
    await client.PATCH('/v1/orders/{orderId}', { params: { path: { orderId } }, body: { metadata: { ...SAMPLE, note: 'updated' } } });
    made.push({ type: 'order.updated', subjectId: orderId });
  },
  'order.paid': (client, made) => moved(client, made, ['pay']),
  'order.fulfilled': (client, made) => moved(client, made, ['pay', 'fulfill']),
  'order.canceled': (client, made) => moved(client, made, ['cancel']),
  'order.refunded': (client, made) => moved(client, made, ['pay', 'refund']),
};

export const TRIGGERABLE: readonly string[] = Object.keys(RECIPES);

/**
 * Makes a change that emits `type`; answers every change made on the way, in order. Should a step
 * be refused, `made` (given by the caller) still lists the changes made before it.
 */
export async function trigger(client: SvcClient, type: string, made: Made[] = []): Promise<Made[]> {
  const recipe = RECIPES[type];
  if (!recipe) throw new Error(`${type} cannot be triggered from here.`);
  await recipe(client, made);
  return made;
}
