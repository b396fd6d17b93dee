import { Type } from '@sinclair/typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SetList } from '../src/db/set.js';
import { shape } from '../src/http/shape.js';
import { StringMap } from '../src/http/string-map.js';
import { openTestDb, type TestDb } from './helpers/db.js';

/** A resource with one field of each kind the shape's rule knows, nullable or not. */
const Thing = Type.Object({
  id: Type.String(),
  status: Type.Union([Type.Literal('open'), Type.Literal('closed')]),
  note: Type.Union([Type.String(), Type.Null()]),
  count: Type.Integer(),
  total: Type.Union([Type.Integer(), Type.Null()]),
  done: Type.Boolean(),
  tags: StringMap(),
  closedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  extra: Type.Optional(Type.Array(Type.String())),
});

const thingShape = shape(Thing, { extra: false, note: { column: 'remark' } });

describe('resource shapes', () => {
  let t: TestDb;
  beforeAll(async () => {
    t = await openTestDb();
    await t.db.query(`CREATE TABLE things (id text, status text, remark text, count bigint, total bigint, done boolean, tags jsonb,
                      closed_at timestamptz, created_at timestamptz)`);
    await t.db.query(`INSERT INTO things VALUES
      ('a', 'open', NULL, 9007199254740991, NULL, false, '{"10":"x","b":"y\\n"}', NULL, '2026-01-02T03:04:05.678Z'),
      ('b', 'closed', 'quote " and \\ and é 😀', 0, -5, true, '{}', '2026-02-03T04:05:06.007Z', '0999-12-31T23:59:59.999Z')`);
  });
  afterAll(() => t.close());

  it('selects the columns of every field read from the row, in schema order', () => {
    expect(thingShape.columns).toBe('id, status, remark, count, total, done, tags, closed_at, created_at');
  });

  it('reads each field by its schema: times as ISO text, integers as numbers, the rest as stored', async () => {
    const rows = await t.db.query(`SELECT ${thingShape.columns} FROM things ORDER BY id`);
    expect(rows.map((row) => thingShape.view(row))).toEqual([
      { id: 'a', status: 'open', note: null, count: 9007199254740991, total: null, done: false, tags: { '10': 'x', b: 'y\n' }, closedAt: null, createdAt: '2026-01-02T03:04:05.678Z' },
      { id: 'b', status: 'closed', note: 'quote " and \\ and é 😀', count: 0, total: -5, done: true, tags: {}, closedAt: '2026-02-03T04:05:06.007Z', createdAt: '0999-12-31T23:59:59.999Z' },
    ]);
    expect(Object.keys(thingShape.view(rows[0]))).toEqual(Object.keys(Thing.properties).filter((k) => k !== 'extra'));
    // A field that does not come from the row takes its place in schema order when given.
    const withExtra = thingShape.view(rows[0], { extra: ['x'] });
    expect(Object.keys(withExtra)).toEqual(Object.keys(Thing.properties));
    expect(withExtra.extra).toEqual(['x']);
  });

  it('renders in the database the same JSON text as serialising the view', async () => {
    const rows = await t.db.query(`SELECT ${thingShape.columns}, ${thingShape.json.select} FROM things ORDER BY id`);
    for (const row of rows) expect(thingShape.json.text(row)).toBe(JSON.stringify(thingShape.view(row)));
  });
});

describe('SET lists', () => {
  it('numbers placeholders after the parameters already held and skips absent fields', () => {
    const set = new SetList(['id', 'wsp', 'now'], 'updated_at = $3').field('name', 'x').field('description', undefined).field('price', null).add('active = false');
    expect(set.sql).toBe('updated_at = $3, name = $4, price = $5, active = false');
    expect(set.params).toEqual(['id', 'wsp', 'now', 'x', null]);
  });
});
