/**
 * Shown while the service has asked the dashboard to wait (429 with Retry-After): the page stays as
 * it is and what it asked for comes once the wait is over (client.ts sends it again by itself).
 */
export function RateLimitNotice({ waitUntil }: { waitUntil: number | null }) {
  if (waitUntil === null) return null;
  const seconds = Math.max(1, Math.ceil((waitUntil - Date.now()) / 1000));
  return (
    <p role="status" className="notice" data-testid="rate-limited">
      Too many requests from this session in the last minute: the service asked for a pause. The page fills in again in {seconds} s.
    </p>
  );
}
