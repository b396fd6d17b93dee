import { useEffect, useRef, useState, type ReactNode } from 'react';

/**
 * A table that may be wider than the screen: it scrolls sideways, and says so while it does (the
 * hint, and a focusable region a keyboard can scroll). On a phone, lists (`table.cards`) show a card
 * per row instead (styles/tables.css), which fits.
 */
export function TableWrap({ label, children }: { label: string; children: ReactNode }) {
  const box = useRef<HTMLDivElement>(null);
  const [wide, setWide] = useState(false);
  useEffect(() => {
    const element = box.current!;
    const measure = () => setWide(element.scrollWidth > element.clientWidth + 1);
    measure();
    const observer = new ResizeObserver(measure);
    observer.observe(element);
    if (element.firstElementChild) observer.observe(element.firstElementChild);
    return () => observer.disconnect();
  }, []);
  return (
    <>
      {wide ? (
        <p className="scroll-hint" data-testid="scroll-hint" aria-hidden="true">
          Scroll sideways for more →
        </p>
      ) : null}
      <div ref={box} className="table-wrap" {...(wide ? { tabIndex: 0, role: 'region', 'aria-label': label } : {})}>
        {children}
      </div>
    </>
  );
}
