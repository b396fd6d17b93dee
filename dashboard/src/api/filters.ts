import { useLocation, useSearch } from 'wouter';

/**
 * A list's filters, kept in the page's own query string (`/dashboard/deliveries?status=failed`), so
 * a filtered view can be reloaded, bookmarked and shared. Filters are never secrets.
 */
export function useFilters<K extends string>(names: readonly K[]): [Partial<Record<K, string>>, (next: Partial<Record<K, string>>) => void] {
  const search = useSearch();
  const [location, navigate] = useLocation();
  const params = new URLSearchParams(search);
  const values: Partial<Record<K, string>> = {};
  for (const name of names) {
    const value = params.get(name);
    if (value) values[name] = value;
  }
  const set = (next: Partial<Record<K, string>>) => {
    const query = new URLSearchParams();
    for (const name of names) if (next[name]) query.set(name, next[name]!);
    const text = query.toString();
    navigate(text ? `${location}?${text}` : location);
  };
  return [values, set];
}

/** The form's non-empty fields among `names`. */
export function formFilters<K extends string>(form: HTMLFormElement, names: readonly K[]): Partial<Record<K, string>> {
  const data = new FormData(form);
  const out: Partial<Record<K, string>> = {};
  for (const name of names) {
    const value = String(data.get(name) ?? '').trim();
    if (value) out[name] = value;
  }
  return out;
}

/** `2026-05-01T10:00` from a datetime-local field, in the reader's zone, as an ISO instant. */
export const toIso = (local: string | undefined) => (local ? new Date(local).toISOString() : undefined);

/** An ISO instant shown back in a datetime-local field. */
export const toLocal = (iso: string | undefined) => {
  if (!iso) return undefined;
  const d = new Date(iso);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};

/** Filters read from a form, with its created-from/until fields (datetime-local) as ISO instants. */
export function withIsoRange<T extends { createdGte?: string; createdLte?: string }>(given: T): T {
  return { ...given, createdGte: toIso(given.createdGte), createdLte: toIso(given.createdLte) };
}
