import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';

export interface ErrorEnvelope {
  code: string;
  message: string;
  requestId: string;
  details?: { path: string; message: string }[];
}

/**
 * Asserts the error envelope of docs/api.md#errors: status and code, a message, and a `requestId` equal to
 * the response's `Request-Id` header; a 401 also carries `WWW-Authenticate: Bearer`.
 */
export function expectError(res: LightMyRequestResponse, status: number, code: string): ErrorEnvelope {
  expect(res.statusCode, `${res.statusCode} ${res.body}`).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  const body = res.json() as { error: ErrorEnvelope };
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(0);
  expect(body.error.requestId).toMatch(/^req_/);
  expect(body.error.requestId).toBe(res.headers['request-id']);
  if (status === 401) expect(res.headers['www-authenticate']).toBe('Bearer');
  else expect(res.headers['www-authenticate']).toBeUndefined();
  return body.error;
}

/** Asserts a 2xx and returns the parsed body. */
export function ok<T = any>(res: LightMyRequestResponse, status = 200): T {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.headers['request-id']).toMatch(/^req_/);
  return res.json() as T;
}
