import { createSvcClient } from '@svc/sdk';

const svc = createSvcClient(); // SVC_BASE_URL (default http://127.0.0.1:3000) and SVC_API_KEY from the environment
const hat = await svc.POST('/v1/products', { body: { name: 'Hat', price: { amount: 1500, currency: 'EUR' } } });
for await (const product of svc.paginate('/v1/products', { params: { query: { limit: 100 } } })) console.log(product.id, product.name);
await svc.GET('/v1/products/{productId}', { params: { path: { productId: hat.id } } }).then((again) => console.log('fetched', again.id));
await svc.DELETE('/v1/products/{productId}', { params: { path: { productId: 'prd_missing' } } }).catch((error) => console.log(error.code, error.requestId));
