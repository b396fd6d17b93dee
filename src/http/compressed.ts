import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';

const brotli = promisify(brotliCompress);
const gzipped = promisify(gzip);

/**
 * A fixed response body sent compressed when the client accepts it (brotli, else gzip), each
 * encoding made once, on first use, and kept. For the reference page's assets and the OpenAPI
 * document: text of hundreds of kilobytes that compresses to a quarter or less.
 */
export class CompressedBody {
  private br: Promise<Buffer> | null = null;
  private gz: Promise<Buffer> | null = null;
  private readonly body: Buffer;

  constructor(body: Buffer | string) {
    this.body = typeof body === 'string' ? Buffer.from(body) : body;
  }

  async send(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const accepted = String(request.headers['accept-encoding'] ?? '');
    reply.header('vary', 'accept-encoding');
    if (/\bbr\b/.test(accepted)) {
      this.br ??= brotli(this.body, { params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_SIZE_HINT]: this.body.length } });
      return reply.header('content-encoding', 'br').send(await this.br);
    }
    if (/\bgzip\b/.test(accepted)) {
      this.gz ??= gzipped(this.body, { level: 9 });
      return reply.header('content-encoding', 'gzip').send(await this.gz);
    }
    return reply.send(this.body);
  }
}
