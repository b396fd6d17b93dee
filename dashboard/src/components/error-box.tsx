import { SvcError } from '../api/client';

/** An API error as the service gave it: its message, code and request id (quote it when asking about a request). */
export function ErrorBox({ error, retry }: { error: unknown; retry?: () => void }) {
  if (!error) return null;
  const svc = error instanceof SvcError ? error : null;
  return (
    <article className="error" role="alert">
      <p>
        <strong>{svc ? `${svc.status} ${svc.code}` : 'Error'}:</strong> {error instanceof Error ? error.message : String(error)}
      </p>
      {svc?.details?.length ? (
        <ul>
          {svc.details.map((d, i) => (
            <li key={i}>
              <code>{d.path}</code>: {d.message}
            </li>
          ))}
        </ul>
      ) : null}
      {svc?.requestId ? (
        <p>
          <small>
            Request id: <code data-testid="request-id">{svc.requestId}</code>
          </small>
        </p>
      ) : null}
      {retry ? (
        <button type="button" className="secondary" onClick={retry}>
          Try again
        </button>
      ) : null}
    </article>
  );
}
