import { Link } from 'wouter';

/** The page of each kind of id, by its prefix (an id is a prefix, `_` and 26 characters: src/lib/ids.ts). */
const PAGES: Record<string, string> = {
  evt: '/events',
  whd: '/deliveries',
  whe: '/endpoints',
  prd: '/products',
  ord: '/orders',
};

const ID = /^(evt|whd|whe|prd|ord)_[0-9a-hjkmnp-tv-z]{26}$/;

/** The dashboard page of an id (`/orders/ord_...`), or null for a text that is not an id with a page. */
export function pageOfId(text: string): string | null {
  const id = text.trim().toLowerCase();
  const match = ID.exec(id);
  return match ? `${PAGES[match[1]]}/${id}` : null;
}

/** An id shown as code, linked to its page when it has one. */
export function IdLink({ id, label }: { id: string; label?: string }) {
  const page = pageOfId(id);
  const text = <code>{id}</code>;
  return page ? (
    <Link href={page} aria-label={label}>
      {text}
    </Link>
  ) : (
    text
  );
}
