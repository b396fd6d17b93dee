import type { ReactNode } from 'react';

/** What an empty list shows: what it will hold, and what to do next. */
export function Empty({ title, children }: { title: string; children: ReactNode }) {
  return (
    <article className="empty" data-testid="empty">
      <h3>{title}</h3>
      {children}
    </article>
  );
}
