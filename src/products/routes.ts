import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';
import { sendCoalesced } from '../http/coalesce.js';
import { notFound } from '../http/errors.js';
import { pageJson, pageUrls, requestCursor } from '../http/list.js';
import { IdParam, WorkspaceHeader, type Mount } from '../http/mount.js';
import { DEFAULT_LIMIT, PageQuery } from '../http/pagination.js';
import { isId } from '../lib/ids.js';
import { Deleted, ProductCreate, ProductList, ProductUpdate } from './schemas.js';
import { deleteProduct, findProduct, listProductsJson, toView, updateProduct, type ProductRow } from './store.js';

const read = { scope: 'workspace', permission: 'workspace:products:read' } as const;
const write = { scope: 'workspace', permission: 'workspace:products:write' } as const;
const ListQuery = Type.Object(PageQuery, { additionalProperties: false });


export function productRoutes(app: FastifyInstance, ctx: AppContext, mount: Mount): void {
  const productParams = mount.params({ productId: IdParam('prd', 'Product id (prd_...).') });
  const common = { tags: ['Products'], headers: WorkspaceHeader };

  app.post<{ Body: Static<typeof ProductCreate> }>('/products', {
    config: { auth: write },
    schema: { ...common, operationId: 'createProduct', summary: 'Create a product', description: 'Emits `product.created`.', params: mount.params(), body: ProductCreate, response: { 201: Type.Ref('Product') } },
    handler: async (request, reply) => {
      const workspaceId = request.workspace!.id;
      const now = ctx.clock.now();
      const row = await ctx.productCreations.create(workspaceId, request.body, now);
      return reply.status(201).send(toView(row));
    },
  });

  app.get<{ Querystring: Static<typeof ListQuery> }>('/products', {
    config: { auth: read },
    schema: { ...common, operationId: 'listProducts', summary: 'List products, newest first', params: mount.params(), querystring: ListQuery, response: { 200: ProductList } },
    handler: async (request, reply) => {
      const { limit = DEFAULT_LIMIT, page } = request.query;
      const workspaceId = request.workspace!.id;
      const binding = { list: 'products', scope: workspaceId, limit, filters: {} };
      const cursor = requestCursor(ctx, page, binding);
      return sendCoalesced(ctx, request, reply, workspaceId, async () => {
        const result = await listProductsJson(ctx.db, workspaceId, cursor, limit);
        return pageJson(result.rows, pageUrls(ctx, request, binding, result));
      });
    },
  });

  app.get<{ Params: { productId: string } }>('/products/:productId', {
    config: { auth: read },
    schema: { ...common, operationId: 'getProduct', summary: 'Retrieve a product (404 once deleted)', params: productParams, response: { 200: Type.Ref('Product') } },
    handler: async (request) => {
      const { productId } = request.params;
      const row = isId('prd', productId) ? await findProduct(ctx.db, request.workspace!.id, productId) : null;
      if (!row) throw notFound('product');
      return toView(row);
    },
  });

  app.patch<{ Params: { productId: string }; Body: Static<typeof ProductUpdate> }>('/products/:productId', {
    config: { auth: write },
    schema: { ...common, operationId: 'updateProduct', summary: 'Update a product', description: 'Emits `product.updated`; `metadata` replaces the whole map, null clears `description` or `price`.', params: productParams, body: ProductUpdate, response: { 200: Type.Ref('Product') } },
    handler: async (request) => {
      const { productId } = request.params;
      if (!isId('prd', productId)) throw notFound('product');
      const workspaceId = request.workspace!.id;
      const now = ctx.clock.now();
      const [row] = await ctx.outbox.write<ProductRow>(updateProduct(workspaceId, productId, request.body, now));
      if (!row) throw notFound('product');
      return toView(row);
    },
  });

  app.delete<{ Params: { productId: string } }>('/products/:productId', {
    config: { auth: write },
    schema: { ...common, operationId: 'deleteProduct', summary: 'Delete a product; its events stay readable', description: 'Emits `product.deleted`; orders keep their snapshot of the product.', params: productParams, response: { 200: Deleted } },
    handler: async (request) => {
      const { productId } = request.params;
      if (!isId('prd', productId)) throw notFound('product');
      const workspaceId = request.workspace!.id;
      const now = ctx.clock.now();
      const deleted = await ctx.outbox.write(deleteProduct(workspaceId, productId, now));
      if (deleted.length === 0) throw notFound('product');
      return { id: productId, deleted: true as const };
    },
  });
}
