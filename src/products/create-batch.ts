import type { Db, Queryable } from '../db/db.js';
import { buildEvent } from '../events/store.js';
import { idTimePrefix, newId } from '../lib/ids.js';
import { toIso } from '../lib/iso.js';
import { fanOutCtes, handOffValues, subscriptionPatterns } from '../webhooks/fanout.js';
import type { HandOff } from '../webhooks/handoff.js';
import type { DeliveryNotifier, FanOutResult } from '../webhooks/notifier.js';
import type { ProductCreateInput } from './schemas.js';
import { PRODUCT_COLUMNS, productSubject, type ProductRow } from './store.js';

/** Batches in flight at once; further creations wait and go together in the next one. */
const MAX_IN_FLIGHT = 4;
/** Creations written per statement at most. */
const MAX_BATCH = 200;

/** One creation as the batch statement takes it: the product's fields, its time and its event. */
export type CreationRow = Omit<ProductRow, 'created_at' | 'updated_at'> & {
  workspace_id: string;
  at: string;
  event_id: string;
  event_body: string;
  delivery_prefix: string;
};

interface Creation {
  row: CreationRow;
  resolve: (row: ProductRow) => void;
  reject: (error: unknown) => void;
}

/**
 * Every product, its `product.created` event and the event's deliveries (the shared fan-out, with
 * hand-off), for a whole batch, in one statement: atomic like the single write of mutateAndEmit, with
 * one commit for the batch. The fan-out's result comes back once, on the first row.
 */
const CREATE_BATCH = `WITH input AS MATERIALIZED (
     SELECT * FROM jsonb_to_recordset($1::jsonb) AS i (
       id text, workspace_id text, name text, description text, price_amount bigint, price_currency text,
       active boolean, metadata jsonb, at timestamptz, event_id text, event_body text, delivery_prefix text)
   ), created AS (
     INSERT INTO products (id, workspace_id, name, description, price_amount, price_currency, active, metadata, created_at, updated_at)
     SELECT id, workspace_id, name, description, price_amount, price_currency, active, metadata, at, at FROM input
     RETURNING ${PRODUCT_COLUMNS}
   ), logged AS (
     INSERT INTO events (id, workspace_id, type, subject_type, subject_id, body, created_at)
     SELECT event_id, workspace_id, 'product.created', 'product', id, event_body, at FROM input
   ), ${fanOutCtes(
     `(SELECT workspace_id, event_id, 'product.created' AS event_type, at, delivery_prefix, $2::text[] AS patterns,
              $3::timestamptz AS lease, $4::int AS slots FROM input)`,
     false,
     true,
   )}
   SELECT created.*, CASE WHEN row_number() OVER () = 1 THEN (SELECT row_to_json(fanout) FROM fanout) END AS fanout FROM created`;

export function creationRow(workspaceId: string, input: ProductCreateInput, now: Date): CreationRow {
  const id = newId('prd', now);
  const event = buildEvent({ workspaceId, type: 'product.created', subject: productSubject(id), at: now });
  return {
    id,
    workspace_id: workspaceId,
    name: input.name,
    description: input.description ?? null,
    price_amount: input.price?.amount ?? null,
    price_currency: input.price?.currency ?? null,
    active: input.active ?? true,
    metadata: input.metadata ?? {},
    at: toIso(now),
    event_id: event.id,
    event_body: event.body,
    delivery_prefix: idTimePrefix('whd', now),
  };
}

export type CreatedRow = ProductRow & { fanout: FanOutResult | null };

/** Writes the creations in one statement, handing deliveries over under `handOff`; the first row has the fan-out's result. */
export function insertCreations(q: Queryable, rows: CreationRow[], handOff: HandOff | null = null): Promise<CreatedRow[]> {
  return q.query(CREATE_BATCH, [JSON.stringify(rows), subscriptionPatterns('product.created'), ...handOffValues(handOff)]);
}

/**
 * Product creations that arrive together are written together. Under load this turns N statements
 * and N commits into a few, which is most of what a creation costs the database; alone, a creation
 * waits one turn of the event loop. Each creation keeps its own id, time and event. If a batch
 * fails, its creations are written one by one, so only a creation that fails on its own fails.
 */
export class ProductCreations {
  private queue: Creation[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly db: Db,
    /** Hands a batch's deliveries to this process's workers, or wakes workers for them. */
    private readonly notifier: DeliveryNotifier,
  ) {}

  create(workspaceId: string, input: ProductCreateInput, now: Date): Promise<ProductRow> {
    const row = creationRow(workspaceId, input, now);
    return new Promise((resolve, reject) => {
      this.queue.push({ row, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.queue.length === 0 || this.inFlight >= MAX_IN_FLIGHT) return;
    this.scheduled = true;
    // One turn of the event loop lets the creations that arrived together join one batch.
    setImmediate(() => {
      this.scheduled = false;
      while (this.queue.length > 0 && this.inFlight < MAX_IN_FLIGHT) {
        const batch = this.queue.splice(0, MAX_BATCH);
        this.inFlight++;
        void this.write(batch).finally(() => {
          this.inFlight--;
          this.schedule();
        });
      }
    });
  }

  private async write(batch: Creation[]): Promise<void> {
    const handOff = this.notifier.handOff(batch.length);
    let rows: CreatedRow[];
    try {
      rows = await insertCreations(this.db, batch.map((c) => c.row), handOff);
    } catch (error) {
      handOff?.cancel();
      if (batch.length === 1) return batch[0].reject(error);
      for (const creation of batch) await this.write([creation]);
      return;
    }
    const bodies = new Map(batch.map((c) => [c.row.event_id, c.row.event_body]));
    this.notifier.committed(handOff, batch.length, rows[0]?.fanout ?? undefined, (eventId) => bodies.get(eventId));
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const creation of batch) {
      const { fanout: _, ...row } = byId.get(creation.row.id)!;
      creation.resolve(row);
    }
  }
}
