import { Type } from '@sinclair/typebox';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { registerErrorHandler } from '../src/http/error-handler.js';
import { ErrorBody } from '../src/http/errors.js';
import { compileValidator } from '../src/http/validation.js';
import { POST_HEADERS, type PostHeader } from '../src/server/openapi/conventions.js';
import { registerOpenApi } from '../src/server/openapi/plugin.js';
import type { Doc, Operation } from './helpers/openapi-doc.js';

describe('route conventions', () => {
  // What switching on a header for every POST does, shown with a header of its own.
  const header: PostHeader = { name: 'X-Example-Key', schema: Type.String({ minLength: 1, maxLength: 8 }), errors: ['ENDPOINT_INACTIVE'] };

  it('honours Idempotency-Key on every POST', () => {
    expect(POST_HEADERS.map((h) => [h.name, h.errors])).toEqual([['Idempotency-Key', ['IDEMPOTENCY_IN_PROGRESS', 'IDEMPOTENCY_MISMATCH']]]);
  });

  it('adds a POST header to every POST under /v1 only: validated, documented, with its errors', async () => {
    const app = Fastify();
    app.setValidatorCompiler(compileValidator);
    registerErrorHandler(app);
    app.addSchema(ErrorBody);
    await registerOpenApi(app, { publicUrl: 'http://127.0.0.1:9', postHeaders: [header] });
    const response = { 201: Type.Object({ ok: Type.Boolean() }) };
    const schema = (operationId: string) => ({ operationId, tags: ['Products'], summary: operationId, response });
    app.post('/v1/things', { schema: schema('createThing') }, async (_request, reply) => reply.status(201).send({ ok: true }));
    app.get('/v1/things', { schema: schema('listThings') }, async (_request, reply) => reply.status(201).send({ ok: true }));
    app.post('/elsewhere', { schema: schema('createElsewhere') }, async (_request, reply) => reply.status(201).send({ ok: true }));
    try {
      const post = (url: string, key?: string) => app.inject({ method: 'POST', url, headers: key === undefined ? {} : { 'x-example-key': key } });
      expect((await post('/v1/things', 'k1')).statusCode).toBe(201);
      expect((await post('/v1/things')).statusCode).toBe(201);
      const refused = await post('/v1/things', 'much too long');
      expect(refused.statusCode).toBe(400);
      expect(refused.json().error).toMatchObject({ code: 'VALIDATION', message: expect.stringContaining('x-example-key') });
      expect((await post('/elsewhere', 'much too long')).statusCode).toBe(201);
      expect((await app.inject({ method: 'GET', url: '/v1/things', headers: { 'x-example-key': 'much too long' } })).statusCode).toBe(201);

      const paths = (app.swagger() as unknown as Doc).paths;
      const headers = (op: Operation) => (op.parameters ?? []).filter((p) => p.in === 'header').map((p) => p.name);
      expect(headers(paths['/v1/things'].post)).toEqual(['x-example-key']);
      expect(Object.keys(paths['/v1/things'].post.responses)).toEqual(['201', '400', '401', '409', '413', '415', '429', '500', '503']);
      expect(headers(paths['/v1/things'].get)).toEqual([]);
      expect(Object.keys(paths['/v1/things'].get.responses)).toEqual(['201', '400', '401', '429', '500', '503']);
      expect(headers(paths['/elsewhere'].post)).toEqual([]);
      expect(Object.keys(paths['/elsewhere'].post.responses)).toEqual(['201', '400', '413', '415', '500']);
    } finally {
      await app.close();
    }
  });
});
