/** The parts of the served OpenAPI document that the tests read. */
export type Parameter = { in: string; name: string; required?: boolean; schema?: Record<string, any>; style?: string; explode?: boolean; $ref?: string };
export type Operation = {
  operationId?: string;
  tags?: string[];
  summary?: string;
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { description?: string; content?: Record<string, { schema: Record<string, unknown> }>; headers?: Record<string, unknown> }>;
};
export type Doc = {
  openapi: string;
  info: { title: string; version: string; license?: { name: string; identifier?: string }; contact?: { name: string; url: string } };
  servers: { url: string }[];
  tags: { name: string; description: string }[];
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Operation>>;
  components: Record<string, Record<string, any>>;
  security: unknown[];
};
