import buildSerializers, { type SerializerCompiler, type SerializerFactory } from '@fastify/fast-json-stringify-compiler';

/**
 * Fastify's response serializers (fast-json-stringify), each built on the first answer it writes
 * rather than when Fastify sets the routes up, as the validators are (validation.ts): a start does
 * not wait for one per status code of every route.
 */
export const lazySerializers: SerializerFactory = (externalSchemas, options) => {
  const compile: SerializerCompiler = buildSerializers()(externalSchemas, options);
  return (route) => {
    let serialize: ((doc: unknown) => string) | undefined;
    return (doc) => (serialize ??= compile(route))(doc);
  };
};
