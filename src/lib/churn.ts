/**
 * Collections that live as long as the process while their items come and go by the thousand per
 * second (attempts in flight, open claims, writes under way) are arrays, not Maps or Sets.
 *
 * V8 rebuilds a Map's or Set's table once deletions have filled it, every few dozen changes for a
 * small one, and the table it replaces keeps the entries it held and a pointer to its successor (for
 * iterators still walking it). Once one such table has reached the old generation, every later
 * table and every item in them hangs off a dead old object, which the young-generation collector
 * cannot tell is dead: it copies them and then promotes them all, until a full collection, after
 * which the chain starts again from whichever table is current. A replaced array backing store
 * points at nothing newer. docs/performance.md ("Garbage") has the figures.
 */

/** Removes the first `item` from `list`; says whether it was there. */
export function removeItem<T>(list: T[], item: T): boolean {
  const at = list.indexOf(item);
  if (at < 0) return false;
  list.splice(at, 1);
  return true;
}

/**
 * A map from strings whose entries come and go with every request (reads in flight, say): a
 * null-prototype object in dictionary mode, whose replaced tables point at nothing newer, where a
 * Map's would chain (above). In a loop of 50 keys in flight out of 3,200, one set and one delete
 * per request, a Map promoted 588 MB and ran 21 full collections; this, 24 MB and one.
 */
export class StringMap<V> {
  private readonly entries: Record<string, V> = Object.create(null) as Record<string, V>;
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(key: string): V | undefined {
    return this.entries[key];
  }

  set(key: string, value: V): void {
    if (!(key in this.entries)) this.count++;
    this.entries[key] = value;
  }

  delete(key: string): boolean {
    if (!(key in this.entries)) return false;
    delete this.entries[key];
    this.count--;
    return true;
  }
}
