import type { Paged } from '../api/hooks';

/** Previous and next page, following the list's own page URLs. */
export function Pager({ list, label }: { list: Paged<unknown>; label: string }) {
  const page = list.data;
  if (!page || (!page.nextPageUrl && !page.previousPageUrl)) return null;
  return (
    <nav className="pager" aria-label={`${label} pages`}>
      <button type="button" className="secondary outline" disabled={!page.previousPageUrl || list.loading} onClick={list.previous}>
        ← Newer
      </button>
      <span>Page {list.pageNumber}</span>
      <button type="button" className="secondary outline" disabled={!page.nextPageUrl || list.loading} onClick={list.next}>
        Older →
      </button>
    </nav>
  );
}
