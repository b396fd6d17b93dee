import { useEffect, useId, useRef, useState, type ReactNode } from 'react';

interface Props {
  /** The button that asks. */
  label: string;
  /** Its accessible name when the label alone is ambiguous in a list ("Delete" → "Delete Hat"). */
  name?: string;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  onConfirm(): Promise<unknown> | void;
  danger?: boolean;
  className?: string;
  disabled?: boolean;
}

/** A button whose action runs only after a confirmation in a modal dialog (the browser's own <dialog>). */
export function ConfirmButton({ label, name, title, children, confirmLabel, onConfirm, danger, className, disabled }: Props) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const element = dialog.current;
    if (open && element && !element.open) element.showModal();
    if (!open && element?.open) element.close();
  }, [open]);
  const confirm = async () => {
    setBusy(true);
    try {
      await onConfirm();
    } finally {
      setBusy(false);
      setOpen(false);
    }
  };
  return (
    <>
      <button type="button" className={className ?? (danger ? 'secondary' : undefined)} disabled={disabled} onClick={() => setOpen(true)} aria-label={name}>
        {label}
      </button>
      <dialog ref={dialog} onClose={() => setOpen(false)} aria-labelledby={titleId}>
        {open ? (
          <article>
            <h3 id={titleId}>{title}</h3>
            {children}
            <footer>
              <button type="button" className="secondary" onClick={() => setOpen(false)} disabled={busy}>
                Cancel
              </button>
              <button type="button" className={danger ? 'danger' : undefined} onClick={confirm} aria-busy={busy} disabled={busy}>
                {confirmLabel}
              </button>
            </footer>
          </article>
        ) : null}
      </dialog>
    </>
  );
}
