import { expect } from 'vitest';
import type { TestApp } from './app.js';

export const URL_A = 'https://hooks.example.com/a';
/** Rate limits the webhook endpoint tests never reach. */
export const unlimited = { rateLimitApiKey: 1_000_000, rateLimitPat: 1_000_000 };

/**
 * Creates an endpoint on the app `app()` (a function, as a beforeAll starts the app): URL_A and
 * `product.*` unless `body` says otherwise, with `token`, by default `apiKey()`; expects 201 and
 * returns the endpoint with its secret.
 */
export function endpointCreator(app: () => TestApp, apiKey: () => string) {
  return async (body: Record<string, unknown> = {}, token = apiKey()) => {
    const res = await app().call(token, 'POST', '/v1/webhooks/endpoints', { url: URL_A, subscribedEvents: ['product.*'], ...body });
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  };
}
