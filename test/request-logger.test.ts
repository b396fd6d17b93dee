import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { loggerOptions } from '../src/http/logger.js';

describe('request loggers', () => {
  it('carry their own request id, keep a route\'s own level, and leave the service logger as it was', async () => {
    const lines: Record<string, unknown>[] = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    let n = 0;
    const app = Fastify({ logger: loggerOptions('info', stream), genReqId: () => `req_${++n}`, disableRequestLogging: true });
    app.get('/plain', async (request) => {
      request.log.info('plain route');
      return {};
    });
    app.get('/quiet', { logLevel: 'error' }, async (request) => {
      request.log.info('hidden');
      request.log.error('quiet route');
      return {};
    });
    try {
      for (const url of ['/plain', '/quiet', '/plain']) expect((await app.inject({ method: 'GET', url })).statusCode).toBe(200);
      app.log.info('service line');
      expect(lines.map((l) => [l.msg, l.reqId])).toEqual([
        ['plain route', 'req_1'],
        ['quiet route', 'req_2'],
        ['plain route', 'req_3'],
        ['service line', undefined],
      ]);
      expect(app.log.level).toBe('info');
    } finally {
      await app.close();
    }
  });
});
