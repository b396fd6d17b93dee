const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

const timeOnly = new Intl.DateTimeFormat(undefined, { timeStyle: 'medium' });

/** A timestamp in the reader's time zone (`short`: the time of day only), the exact ISO value in its title. */
export function Time({ value, short }: { value: string | null | undefined; short?: boolean }) {
  if (!value) return <span className="muted">—</span>;
  return (
    <time dateTime={value} title={value}>
      {(short ? timeOnly : dateTime).format(new Date(value))}
    </time>
  );
}

/** An amount in minor units as money, e.g. 1500 EUR → €15.00. */
export function money(amount: number, currency: string): string {
  try {
    const format = new Intl.NumberFormat(undefined, { style: 'currency', currency });
    const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
    return format.format(amount / 10 ** digits);
  } catch {
    return `${amount} ${currency}`;
  }
}

const TONES: Record<string, string> = {
  success: 'good',
  active: 'good',
  pending: 'info',
  failed: 'bad',
  auto: 'bad',
  'auto-disabled': 'bad',
  failing: 'bad',
  disabled: 'muted',
  inactive: 'muted',
  paused: 'warn',
  revoked: 'muted',
  unread: 'info',
  paid: 'good',
  fulfilled: 'good',
  canceled: 'muted',
  refunded: 'warn',
  live: 'good',
  connecting: 'info',
  reconnecting: 'warn',
  stopped: 'bad',
  running: 'info',
  completed: 'good',
};

/** A short status word with a colour that matches its meaning (and the word itself, for those who do not see colour). */
export function Badge({ value }: { value: string }) {
  return <mark className={`badge tone-${TONES[value] ?? 'muted'}`}>{value}</mark>;
}

/** A currency's decimals as the browser knows them (EUR 2, JPY 0, KWD 3); 2 for a code it does not know. */
export function currencyDigits(currency: string): number {
  try {
    return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
  } catch {
    return 2;
  }
}

/**
 * An amount typed in major units ("25", "25.5", "25,50") as the API's minor units (2550 for EUR,
 * 25 for JPY), exactly (no floating point); null unless it is a plain amount with at most the
 * currency's decimals.
 */
export function toMinorUnits(text: string, currency: string): number | null {
  const digits = currencyDigits(currency);
  const parts = /^(\d+)(?:[.,](\d*))?$/.exec(text.trim());
  if (!parts) return null;
  const [, whole, fraction = ''] = parts;
  if (fraction.length > digits) return null;
  const minor = Number(whole + fraction.padEnd(digits, '0'));
  return Number.isSafeInteger(minor) ? minor : null;
}
