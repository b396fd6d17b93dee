import { newId } from '../lib/ids.js';
import type { Db, Queryable } from '../db/db.js';
import type { HandOff } from '../outbox/notifier.js';
import { changeManyIn, eventFields, type Batch, type EventFields, type Outbox } from '../outbox/outbox.js';
import type { ProductCreateInput } from './schemas.js';
import { PRODUCT_COLUMNS, productSubject, type ProductRow } from './store.js';

/** Batches in flight at once; further creations wait and go together in the next one. */
const MAX_IN_FLIGHT = 4;
/** Creations written per statement at most. */
const MAX_BATCH = 200;

/** One creation as the batch statement takes it: the product's fields and its event's. */
export type CreationRow = Omit<ProductRow, 'created_at' | 'updated_at'> & EventFields;

interface Creation {
  row: CreationRow;
  resolve: (row: ProductRow) => void;
  reject: (error: unknown) => void;
}

/** The products of a batch's input rows (Outbox.changeMany adds their events and deliveries). */
const INSERT_PRODUCTS = `INSERT INTO products (id, workspace_id, name, description, price_amount, price_currency, active, metadata, created_at, updated_at)
     SELECT id, workspace_id, name, description, price_amount, price_currency, active, metadata, at, at FROM input
     RETURNING ${PRODUCT_COLUMNS}`;
const PRODUCT_INPUT = 'id text, name text, description text, price_amount bigint, price_currency text, active boolean, metadata jsonb';

export function creationRow(workspaceId: string, input: ProductCreateInput, now: Date): CreationRow {
  const id = newId('prd', now);
  const { fields } = eventFields({ workspaceId, type: 'product.created', subject: productSubject(id), at: now });
  return {
    id,
    name: input.name,
    description: input.description ?? null,
    price_amount: input.price?.amount ?? null,
    price_currency: input.price?.currency ?? null,
    active: input.active ?? true,
    metadata: input.metadata ?? {},
    ...fields,
  };
}

function creations(rows: CreationRow[]): Batch<CreationRow> {
  return { columns: PRODUCT_INPUT, mutation: INSERT_PRODUCTS, rows };
}

/**
 * Writes the creations, with their events and deliveries, in one statement of their own through the
 * outbox; their deliveries are handed over under `handOff`, or under a reservation of its own.
 */
export function insertCreations(outbox: Outbox, rows: CreationRow[], handOff?: HandOff | null): Promise<ProductRow[]> {
  return outbox.changeMany<ProductRow, CreationRow>(creations(rows), handOff);
}

/** Writes the creations, with their events and deliveries, inside the caller's transaction `q`. */
export function insertCreationsIn(q: Queryable, rows: CreationRow[]): Promise<ProductRow[]> {
  return changeManyIn<ProductRow, CreationRow>(q, creations(rows));
}

/**
 * Product creations that arrive together are written together. Under load this turns N statements
 * and N commits into a few, which is most of what a creation costs the database; alone, a creation
 * waits one turn of the event loop. Each creation keeps its own id, time and event. If a batch
 * fails, its creations are written one by one, so only a creation that fails on its own fails.
 * One per process, built at start (runtime.ts).
 */
export class ProductCreations {
  private queue: Creation[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly db: Db,
    private readonly outbox: Outbox,
  ) {}

  create(workspaceId: string, input: ProductCreateInput, now: Date): Promise<ProductRow> {
    const row = creationRow(workspaceId, input, now);
    // A creation inside a request's transaction (a keyed POST, db/scope.ts) is written alone in it:
    // a batch is shared by requests, and must not commit or roll back with one of them.
    if (this.db.inScope()) return insertCreations(this.outbox, [row]).then(([created]) => created);
    return new Promise<ProductRow>((resolve, reject) => {
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
    let rows: ProductRow[];
    try {
      rows = await insertCreations(this.outbox, batch.map((c) => c.row));
    } catch (error) {
      if (batch.length === 1) return batch[0].reject(error);
      for (const creation of batch) await this.write([creation]);
      return;
    }
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const creation of batch) creation.resolve(byId.get(creation.row.id)!);
  }
}

