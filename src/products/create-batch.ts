import { DatabaseUnavailableError, type Db } from '../db/db.js';
import { newId } from '../lib/ids.js';
import { currentTrace } from '../lib/trace.js';
import type { Outbox, Write } from '../engine/outbox/outbox.js';
import type { ProductCreateInput } from './schemas.js';
import { PRODUCT_COLUMNS, productSubject, type ProductRow } from './store.js';

/** Batches in flight at once; further creations wait and go together in the next one. */
const MAX_IN_FLIGHT = 2;
/** Creations written per statement at most. */
const MAX_BATCH = 200;

/** One product to create: its event, and its own fields as the outbox's `input` rows carry them. */
export interface Creation {
  event: Write['events'][number]['event'];
  values: Omit<ProductRow, 'created_at' | 'updated_at'>;
}

export function creation(workspaceId: string, input: ProductCreateInput, now: Date): Creation {
  const id = newId('prd', now);
  return {
    // Kept now: a batch is written later, in the span of whichever request came first.
    event: { workspaceId, type: 'product.created', subject: productSubject(id), at: now, trace: currentTrace() },
    values: {
      id,
      name: input.name,
      description: input.description ?? null,
      price_amount: input.price?.amount ?? null,
      price_currency: input.price?.currency ?? null,
      active: input.active ?? true,
      metadata: input.metadata ?? {},
    },
  };
}

/** Products created together, with their product.created events: one row of `input` each (the outbox adds events and deliveries). */
export function createProducts(creations: Creation[]): Write {
  return {
    change: {
      sql: `INSERT INTO products (id, workspace_id, name, description, price_amount, price_currency, active, metadata, created_at, updated_at)
            SELECT id, workspace_id, name, description, price_amount, price_currency, active, metadata, at, at FROM input
            RETURNING ${PRODUCT_COLUMNS}`,
      columns: 'id text, name text, description text, price_amount bigint, price_currency text, active boolean, metadata jsonb',
    },
    events: creations,
  };
}

interface Pending {
  creation: Creation;
  resolve: (row: ProductRow) => void;
  reject: (error: unknown) => void;
}

/**
 * Product creations that arrive together are written together. Under load this turns N statements
 * and N commits into a few, which is most of what a creation costs the database; alone, a creation
 * waits one turn of the event loop. Each creation keeps its own id, time and event. If the database
 * refuses a batch, its creations are written one by one, so only a creation that fails on its own
 * fails; if it does not answer, the whole batch fails at once.
 * One per process, built at start (server/runtime.ts).
 */
export class ProductCreations {
  private queue: Pending[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly db: Db,
    private readonly outbox: Outbox,
  ) {}

  create(workspaceId: string, input: ProductCreateInput, now: Date): Promise<ProductRow> {
    const made = creation(workspaceId, input, now);
    // A creation inside a request's transaction (a keyed POST, db/scope.ts) is written alone in it:
    // a batch is shared by requests, and must not commit or roll back with one of them.
    if (this.db.inScope()) return this.outbox.write<ProductRow>(createProducts([made])).then(([created]) => created);
    return new Promise<ProductRow>((resolve, reject) => {
      this.queue.push({ creation: made, resolve, reject });
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

  private async write(batch: Pending[]): Promise<void> {
    let rows: ProductRow[];
    try {
      rows = await this.outbox.write<ProductRow>(createProducts(batch.map((p) => p.creation)));
    } catch (error) {
      // The database did not answer: every creation fails with it, at once. A refusal may be one
      // creation's own: each is tried alone, so that only that one fails.
      if (batch.length === 1 || error instanceof DatabaseUnavailableError) {
        for (const pending of batch) pending.reject(error);
        return;
      }
      for (const pending of batch) await this.write([pending]);
      return;
    }
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const pending of batch) pending.resolve(byId.get(pending.creation.values.id)!);
  }
}

