// The baseline of the API read scenario: a bare Fastify JSON hello-world on the same machine, or,
// with BODY_BYTES, a bare Fastify answering a fixed JSON body of that many bytes.
import Fastify from 'fastify';

const app = Fastify({ logger: false });
const bytes = Number(process.env.BODY_BYTES ?? 0);
const body = bytes > 0 ? JSON.stringify({ data: 'x'.repeat(Math.max(0, bytes - 12)) }) : null;
app.get('/', async (_request, reply) => (body ? reply.type('application/json; charset=utf-8').send(body) : { hello: 'world' }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
process.stdout.write('ready\n');
