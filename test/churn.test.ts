import { describe, expect, it } from 'vitest';
import { removeItem, StringMap } from '../src/lib/churn.js';

describe('collections for items that come and go', () => {
  it('removeItem takes out the first occurrence only, and says whether there was one', () => {
    const a = { n: 1 };
    const b = { n: 2 };
    const list = [a, b, a];
    expect(removeItem(list, a)).toBe(true);
    expect(list).toEqual([b, a]);
    expect(list[1]).toBe(a);
    expect(removeItem(list, { n: 2 })).toBe(false);
    expect(list).toHaveLength(2);
  });

  it('StringMap counts its keys, and takes any string as a key, the names of Object.prototype too', () => {
    const map = new StringMap<number>();
    expect(map.get('constructor')).toBeUndefined();
    expect(map.delete('toString')).toBe(false);
    for (const [i, key] of ['__proto__', 'constructor', 'hasOwnProperty', '', 'ws_1 /v1/products?limit=20'].entries()) map.set(key, i);
    expect(map.size).toBe(5);
    expect(map.get('__proto__')).toBe(0);
    expect(map.get('constructor')).toBe(1);
    expect(map.get('')).toBe(3);
    map.set('constructor', 10);
    expect(map.size).toBe(5);
    expect(map.get('constructor')).toBe(10);
    expect(map.delete('__proto__')).toBe(true);
    expect(map.delete('__proto__')).toBe(false);
    expect(map.get('__proto__')).toBeUndefined();
    expect(map.size).toBe(4);
    for (let i = 0; i < 10_000; i++) {
      map.set(`k${i}`, i);
      if (i >= 50) map.delete(`k${i - 50}`);
    }
    expect(map.size).toBe(54);
    expect(map.get('k9999')).toBe(9999);
    expect(map.get('k9949')).toBeUndefined();
  });
});
