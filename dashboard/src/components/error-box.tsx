import { SvcError } from '../api/client';

/**
 * Refusals whose API message tells a program which call to make: here they say what to do on the
 * page instead (the code and request id stay, for a search in the docs or the log).
 */
const ON_THE_PAGE: Record<string, string> = {
  ENDPOINT_INACTIVE: 'This endpoint is paused or disabled, or was deleted: re-enable it on its page first.',
};

/** An API error as the service gave it: its message, code and request id (quote it when asking about a request). */
export function ErrorBox({ error, retry }: { error: unknown; retry?: () => void }) {
  if (!error) return null;
  const svc = error instanceof SvcError ? error : null;
  const message = (svc && ON_THE_PAGE[svc.code]) ?? (error instanceof Error ? error.message : String(error));
  return (
    <article className="error" role="alert">
      <p>
        <strong>{svc ? `${svc.status} ${svc.code}` : 'Error'}:</strong> {message}
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
