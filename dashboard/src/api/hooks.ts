import { useCallback, useEffect, useRef, useState } from 'react';
import { keepShared, readShared, shared } from './cache';
import { fetchPage, type Envelope, type SvcClient } from './client';

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload(): void;
}

/**
 * Runs `load` when `deps` change (and on reload); answers that arrive after a newer request are
 * dropped. `initial` gives data to show before the first answer, when there is some at hand.
 */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[], initial?: () => T | undefined): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error: unknown; loading: boolean }>(() => {
    const data = initial?.();
    return { data, error: null, loading: data === undefined };
  });
  const [tick, setTick] = useState(0);
  const latest = useRef(0);
  useEffect(() => {
    const run = ++latest.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => run === latest.current && setState({ data, error: null, loading: false }),
      (error: unknown) => run === latest.current && setState({ data: undefined, error, loading: false }),
    );
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/**
 * useLoad of an answer several pages share (cache.ts): shown at once while it is kept, else loaded
 * and kept for `maxAgeMs`; `reload` asks the service afresh.
 */
export function useShared<T>(key: string, maxAgeMs: number, load: () => Promise<T>, deps: readonly unknown[]): Loaded<T> {
  const afresh = useRef(false);
  const loaded = useLoad(
    () => {
      const skipKept = afresh.current;
      afresh.current = false;
      return skipKept ? load().then((value) => (keepShared(key, value), value)) : shared(key, maxAgeMs, load);
    },
    deps,
    () => readShared<T>(key, maxAgeMs),
  );
  const { reload: again } = loaded;
  const reload = useCallback(() => {
    afresh.current = true;
    again();
  }, [again]);
  return { ...loaded, reload };
}

export interface Paged<T> extends Loaded<Envelope<T>> {
  /** 1 on the first page; moves with next and previous. */
  pageNumber: number;
  next(): void;
  previous(): void;
}

/**
 * A list shown a page at a time: the first page from `first`, then the pages the service names in
 * nextPageUrl and previousPageUrl (followed unchanged, so filters and limit stay bound to them).
 */
export function usePaged<T>(client: SvcClient, first: () => Promise<Envelope<T>>, deps: readonly unknown[]): Paged<T> {
  // New filters (deps) start again at the first page.
  const key = JSON.stringify(deps);
  const [position, setPosition] = useState<{ key: string; url: string | null; number: number }>({ key, url: null, number: 1 });
  const current = position.key === key ? position : { key, url: null, number: 1 };
  const shown = `${key} ${current.url}`;
  const loaded = useLoad(async () => ({ shown, page: await (current.url ? fetchPage<T>(client, current.url) : first()) }), [key, current.url]);
  // A page of other filters (or another page) is not shown while the asked one loads: stale rows
  // under new filters would be taken for an answer. A reload of the same page keeps it meanwhile.
  const page = loaded.data?.shown === shown ? loaded.data.page : undefined;
  return {
    ...loaded,
    data: page,
    pageNumber: current.number,
    next: () => {
      if (page?.nextPageUrl) setPosition({ key, url: page.nextPageUrl, number: current.number + 1 });
    },
    // Back on the first page, it is asked for afresh (newer items show up there).
    previous: () => {
      if (page?.previousPageUrl) setPosition({ key, url: current.number <= 2 ? null : page.previousPageUrl, number: current.number - 1 });
    },
  };
}

/** A write in progress: its error and whether it runs, for a form's button and error box. */
export function useAction<A extends unknown[], R>(action: (...args: A) => Promise<R>) {
  const [state, setState] = useState<{ running: boolean; error: unknown }>({ running: false, error: null });
  const run = useCallback(
    async (...args: A): Promise<R | undefined> => {
      setState({ running: true, error: null });
      try {
        const result = await action(...args);
        setState({ running: false, error: null });
        return result;
      } catch (error) {
        setState({ running: false, error });
        return undefined;
      }
    },
    [action],
  );
  return { run, running: state.running, error: state.error, clear: () => setState({ running: false, error: null }) };
}
