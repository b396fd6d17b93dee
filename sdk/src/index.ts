export { createSvcClient, type ListItem, type ListPath, type ResponseData, type SvcClient, type SvcClientOptions } from './client.js';
export { SvcError, UNEXPECTED_RESPONSE } from './errors.js';
export type { components, operations, paths, webhooks } from './schema.js';
export type { ApiErrorBody, ErrorCode, Event, EventOf, EventType, Method, Order, OrderLineItem, PathsOf, Product, PushDevice, SubjectOf, SubjectTypes, WebhookDelivery, WebhookEndpoint, WebhookEndpointStats } from './types.js';
export { verifyWebhook, WebhookVerificationError, type WebhookHeaders } from './webhooks.js';
