import { useState } from 'react';

/** A secret the service returns once: shown here, with a copy button, until the person moves on. */
export function SecretOnce({ label, value, children, onDone }: { label: string; value: string; children?: React.ReactNode; onDone?: () => void }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied(true);
    } catch {
      // Without clipboard access the text is selected, ready for Ctrl+C.
      (document.getElementById('secret-once') as HTMLInputElement | null)?.select();
    }
  };
  return (
    <article className="secret-once" data-testid="secret-once">
      <h3>{label}</h3>
      <p>
        <strong>Copy it now: it is shown this once.</strong> The service keeps it encrypted or hashed and never shows it again.
      </p>
      <div role="group">
        <input id="secret-once" aria-label={label} readOnly value={value} onFocus={(e) => e.currentTarget.select()} />
        <button type="button" onClick={copy}>
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
      {children}
      {onDone ? (
        <button type="button" className="secondary" onClick={onDone}>
          Done
        </button>
      ) : null}
    </article>
  );
}
