import { useMemo, useState } from 'react';
import type { Event } from '@svc/sdk';
import { Link } from 'wouter';
import { inEventLog, useCatalog } from '../../api/catalog';
import { useFilters } from '../../api/filters';
import { TAIL_LIMIT, useLiveTail } from '../../api/live-tail';
import { Empty } from '../../components/empty';
import { ErrorBox } from '../../components/error-box';
import { Badge, Time } from '../../components/format';
import { IdLink } from '../../components/id-link';
import { TableWrap } from '../../components/table-wrap';

const STATE_TEXT = {
  connecting: 'Connecting…',
  live: 'Live: new events appear at the top.',
  reconnecting: 'Connection lost, reconnecting (events meanwhile are not missed)…',
  paused: 'Paused: resume to receive what happened meanwhile.',
  stopped: 'Stopped: the service refused the stream.',
} as const;

/** Every exact type of the catalog and every prefix pattern above them (`webhook.*`, `webhook.endpoint.*`). */
function patterns(types: string[]): string[] {
  const prefixes = new Set<string>();
  for (const type of types) {
    const parts = type.split('.');
    for (let i = 1; i < parts.length; i++) prefixes.add(`${parts.slice(0, i).join('.')}.*`);
  }
  return [...[...prefixes].sort(), ...types];
}

/** The subject's page in the dashboard, where it has one. */
function subjectLink(event: Event) {
  return 'subject' in event ? <IdLink id={event.subject.id} /> : <span className="muted">—</span>;
}

/** A live tail of the workspace's event stream: the newest events on top, filtered by type, pausable. */
export function LiveTail() {
  const catalog = useCatalog();
  const [filters, setFilters] = useFilters(['type'] as const);
  const [running, setRunning] = useState(true);
  const tail = useLiveTail(filters.type, running);
  const choices = useMemo(() => patterns((catalog.data ?? []).map((t) => t.type).filter(inEventLog)), [catalog.data]);

  return (
    <section>
      <header className="title-row">
        <h1>Live tail</h1>
        <p role="status" data-testid="tail-state">
          <Badge value={tail.state} /> {STATE_TEXT[tail.state]}
        </p>
      </header>
      <form
        className="inline-form"
        aria-label="Live tail filter"
        onSubmit={(e) => {
          e.preventDefault();
          const type = String(new FormData(e.currentTarget).get('type') ?? '').trim();
          setFilters({ type: type || undefined });
        }}
      >
        <label>
          Event type (exact, or a group such as <code>order.*</code>)
          <input name="type" list="tail-types" defaultValue={filters.type ?? ''} placeholder="every type" autoComplete="off" />
          <datalist id="tail-types">
            {choices.map((c) => (
              <option key={c} value={c} />
            ))}
          </datalist>
        </label>
        <button type="submit">Follow</button>
        <button type="button" className="secondary" onClick={() => setRunning(!running)} aria-pressed={!running}>
          {running ? 'Pause' : 'Resume'}
        </button>
        <button type="button" className="secondary outline" onClick={tail.clear} disabled={tail.events.length === 0}>
          Clear
        </button>
      </form>
      <ErrorBox error={tail.error} />
      <p className="muted">
        <small>
          {tail.received} received{filters.type ? ` of type ${filters.type}` : ''} since this page opened; the newest {TAIL_LIMIT} are kept here. Every
          event stays in the <Link href="/events">event log</Link>.
        </small>
      </p>
      {tail.events.length === 0 ? (
        <Empty title="Waiting for events">
          <p>
            Events show up here the moment they happen: create a <Link href="/products">product</Link>, or an order through the API, in another tab.
          </p>
        </Empty>
      ) : (
        <TableWrap label="Live events">
          <table className="striped cards" data-testid="tail">
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Type</th>
                <th scope="col">Subject</th>
                <th scope="col">Event</th>
              </tr>
            </thead>
            <tbody>
              {tail.events.map((event) => (
                <tr key={event.id}>
                  <td data-label="Time">
                    <Time value={event.created} short />
                  </td>
                  <td data-label="Type">{event.type}</td>
                  <td data-label="Subject">{subjectLink(event)}</td>
                  <td data-label="Event">
                    <details>
                      <summary>
                        <code>{event.id}</code>
                      </summary>
                      <pre className="code" tabIndex={0} aria-label={`Body of event ${event.id}`}>
                        {JSON.stringify(event, null, 2)}
                      </pre>
                    </details>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </section>
  );
}
