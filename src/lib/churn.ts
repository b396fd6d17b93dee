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
