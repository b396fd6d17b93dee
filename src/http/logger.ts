import type { FastifyBaseLogger, FastifyRequest, FastifyServerOptions } from 'fastify';

/** Credentials and signing secrets by their shape (DESIGN "Credentials", "Webhook endpoints"). */
const SECRET_SHAPES = /svc_(?:sk|pat)_[0-9A-Za-z_]+|whsec_[0-9A-Za-z+/=_%-]+/g;

/** Replaces anything shaped like a credential or signing secret, e.g. one a client put in a URL. */
export function scrubSecrets(text: string): string {
  return text.replace(SECRET_SHAPES, '[redacted]');
}

const REQUEST_ID = Symbol('requestId');

/**
 * Each request's logger (Fastify's `childLoggerFactory`): it carries the request id, which the
 * `mixin` below adds to every line it writes. Binding the id the usual way (`child({ reqId })`)
 * runs the redaction over the binding as each request starts, logged or not (wildcard paths apply
 * to every key), which was about 3% of a cached read's CPU; this way the id costs nothing until a
 * line is written. A route with no level or serializers of its own needs no pino child at all: an
 * object inheriting from the service's logger logs the same, with its own request id.
 */
export function requestLogger(logger: FastifyBaseLogger, bindings: { reqId?: string }, options: object): FastifyBaseLogger {
  const child = (Object.keys(options).length === 0 ? Object.create(logger) : logger.child({}, options)) as FastifyBaseLogger & {
    [REQUEST_ID]?: string;
  };
  child[REQUEST_ID] = bindings.reqId;
  return child;
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
    mixin: (_object: object, _level: number, logger: object) => {
      const id = (logger as { [REQUEST_ID]?: string })[REQUEST_ID];
      return id ? { reqId: id } : {};
    },
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
