import type { FastifyRequest, FastifyServerOptions } from 'fastify';

/** Credentials and signing secrets by their shape (docs/security.md#secrets-at-rest-and-in-logs). */
const SECRET_SHAPES = /svc_(?:sk|pat)_[0-9A-Za-z_]+|whsec_[0-9A-Za-z+/=_%-]+/g;

/** Replaces anything shaped like a credential or signing secret, e.g. one a client put in a URL. */
export function scrubSecrets(text: string): string {
  return text.replace(SECRET_SHAPES, '[redacted]');
}

/**
 * The service's logger settings. Requests are logged by method, URL (with anything shaped like a
 * credential or signing secret replaced) and addresses, never with headers or bodies; the
 * redactions cover any log call that passes a header set or an object holding a credential or a
 * secret. docs/security.md names the test that proves it.
 */
export function loggerOptions(level: string, stream?: NodeJS.WritableStream): FastifyServerOptions['logger'] {
  return {
    level,
    serializers: {
      req: (request: FastifyRequest) => ({
        method: request.method,
        url: scrubSecrets(request.url),
        host: request.host,
        remoteAddress: request.ip,
        remotePort: request.socket?.remotePort,
      }),
    },
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        'req.headers["service-workspace-id"]',
        'headers.authorization',
        '*.headers.authorization',
        'secret',
        '*.secret',
        'key',
        '*.key',
        'token',
        '*.token',
      ],
      censor: '[redacted]',
    },
    ...(stream ? { stream } : {}),
  };
}
