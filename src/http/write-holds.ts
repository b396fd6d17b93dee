import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.js';

/** Methods whose requests change nothing, so write no event. */
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Every request that may write holds the event log's settled horizon at its arrival time until its
 * answer is sent (outbox/in-flight.ts): its events take that time or a later one, and commit before
 * it answers. So an event stream of this process never passes a time at which such a request may
 * still add an event. A client that hangs up early releases the hold early; the outbox's own hold
 * around each statement still covers the write itself.
 */
export function holdWrites(app: FastifyInstance, ctx: AppContext): void {
  app.addHook('onRequest', (request, reply, done) => {
    if (!READS.has(request.method)) {
      const release = ctx.writes.hold();
      reply.raw.once('finish', release);
      reply.raw.once('close', release);
    }
    done();
  });
}
