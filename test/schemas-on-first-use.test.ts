import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { lazySerializers } from '../src/http/serialization.js';
import { compileValidator } from '../src/http/validation.js';

/** A schema that records whether anything has read it yet (a compiler does, to build its code). */
function watched<T extends object>(schema: T): { schema: T; read: () => boolean } {
  let read = false;
  const proxy = new Proxy(schema, {
    get(target, key, receiver) {
      read = true;
      return Reflect.get(target, key, receiver);
    },
  });
  return { schema: proxy, read: () => read };
}

const Thing = Type.Object({ name: Type.String({ minLength: 1 }), count: Type.Integer() }, { additionalProperties: false });

describe('route schemas, compiled on first use (a start builds none)', () => {
  it('builds a body validator on its first call; each call reports its own errors', () => {
    const { schema, read } = watched(Thing);
    const validate = compileValidator({ schema, httpPart: 'body' });
    expect(read()).toBe(false);

    expect(validate({ name: '', count: 1 })).toBe(false);
    expect(read()).toBe(true);
    expect(validate.errors?.[0]).toMatchObject({ instancePath: '/name' });
    expect(validate({ name: 'Hat', count: 1 })).toBe(true);
    expect(validate.errors ?? null).toBeNull();
    // Bodies are not coerced: a number written as text is refused.
    expect(validate({ name: 'Hat', count: '1' })).toBe(false);
    expect(validate.errors?.[0]).toMatchObject({ instancePath: '/count' });
  });

  it('builds a query validator on its first call, converting text and refusing integers that are not plain decimals', () => {
    const { schema, read } = watched(Type.Object({ limit: Type.Integer() }));
    const validate = compileValidator({ schema, httpPart: 'querystring' });
    expect(read()).toBe(false);

    const query: Record<string, unknown> = { limit: '10' };
    expect(validate(query)).toBe(true);
    expect(read()).toBe(true);
    expect(query.limit).toBe(10);
    expect(validate({ limit: '0x10' })).toBe(false);
    expect(validate.errors?.[0]).toMatchObject({ instancePath: '/limit', keyword: 'decimal' });
  });

  it('builds a response serializer on the first answer it writes, which keeps only the declared fields', () => {
    const { schema, read } = watched(Thing);
    const serialize = lazySerializers(undefined, undefined)({ method: 'GET', url: '/v1/things/:id', httpStatus: '200', schema });
    expect(read()).toBe(false);

    expect(JSON.parse(serialize({ name: 'Hat', count: 2, secret: 'no' }))).toEqual({ name: 'Hat', count: 2 });
    expect(read()).toBe(true);
    expect(JSON.parse(serialize({ name: 'Cap', count: 3 }))).toEqual({ name: 'Cap', count: 3 });
  });
});
