import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/db.js';
import type { ReadCoalescer } from '../http/coalesce.js';
import type { ListContext } from '../http/list.js';
import { WorkspaceHeader, type Mount } from '../http/mount.js';
import { resource } from '../http/resource.js';
import type { Clock } from '../lib/clock.js';
import type { Outbox } from '../engine/outbox/outbox.js';
import type { ProductCreations } from './create-batch.js';
import { Deleted, ProductCreate, ProductList, ProductUpdate } from './schemas.js';
import { deleteProduct, findProduct, listProductsJson, toView, updateProduct, type ProductRow } from './store.js';

const read = { scope: 'workspace', permission: 'workspace:products:read' } as const;
const write = { scope: 'workspace', permission: 'workspace:products:write' } as const;

/** What the product routes use of the service. */
export type ProductDeps = ListContext & { db: Db; clock: Clock; outbox: Pick<Outbox, 'write'>; productCreations: Pick<ProductCreations, 'create'>; reads: ReadCoalescer };

export function productRoutes(app: FastifyInstance, deps: ProductDeps, mount: Mount): void {
  const { db, clock, outbox } = deps;
  const products = resource(app, { path: '/products', tag: 'Products', mount, headers: WorkspaceHeader, item: { name: 'productId', prefix: 'prd', noun: 'product' }, read, write, pages: deps });
  const Product = Type.Ref('Product');

  products.create({
    operationId: 'createProduct',
    summary: 'Create a product',
    description: 'Emits `product.created`.',
    body: ProductCreate,
    response: Product,
    handle: async ({ owner, body }) => toView(await deps.productCreations.create(owner, body, clock.now())),
  });

  products.list({
    operationId: 'listProducts',
    summary: 'List products, newest first',
    response: ProductList,
    list: 'products',
    coalesce: deps.reads,
    rows: ({ owner, cursor, limit }) => listProductsJson(db, owner, cursor, limit),
  });

  products.retrieve({
    operationId: 'getProduct',
    summary: 'Retrieve a product (404 once deleted)',
    response: Product,
    handle: ({ owner, id }) => findProduct(db, owner, id),
    view: toView,
  });

  products.update({
    operationId: 'updateProduct',
    summary: 'Update a product',
    description: 'Emits `product.updated`; `metadata` replaces the whole map, null clears `description` or `price`.',
    body: ProductUpdate,
    response: Product,
    handle: async ({ owner, id, body }) => (await outbox.write<ProductRow>(updateProduct(owner, id, body, clock.now())))[0],
    view: toView,
  });

  products.remove({
    operationId: 'deleteProduct',
    summary: 'Delete a product; its events stay readable',
    description: 'Emits `product.deleted`; orders keep their snapshot of the product.',
    response: Deleted,
    handle: async ({ owner, id }) => (await outbox.write(deleteProduct(owner, id, clock.now()))).length > 0,
  });
}
