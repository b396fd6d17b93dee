import { useState, type FormEvent } from 'react';
import { useLocation } from 'wouter';
import { pageOfId } from './id-link';

/** A box in the header that opens the page of any id pasted into it: evt_, whd_, whe_, prd_ or ord_. */
export function JumpToId() {
  const [, navigate] = useLocation();
  const [problem, setProblem] = useState<string | null>(null);
  const submit = (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    const form = event.currentTarget;
    const text = String(new FormData(form).get('id') ?? '').trim();
    const page = pageOfId(text);
    if (!page) {
      setProblem(text ? `"${text}" is not an id of an event (evt_), delivery (whd_), endpoint (whe_), product (prd_) or order (ord_).` : null);
      return;
    }
    setProblem(null);
    form.reset();
    navigate(page);
  };
  return (
    <form role="search" className="jump" onSubmit={submit} aria-label="Jump to an id">
      <input name="id" type="search" placeholder="Jump to an id: evt_, whd_, ord_…" aria-label="Id to open" autoComplete="off" spellCheck={false} aria-invalid={problem ? true : undefined} aria-describedby={problem ? 'jump-problem' : undefined} />
      {problem ? (
        <small id="jump-problem" className="error" role="alert">
          {problem}
        </small>
      ) : null}
    </form>
  );
}
