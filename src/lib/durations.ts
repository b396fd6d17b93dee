const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `500ms`, `10s`, `5m`, `2h`, `1d` into milliseconds; null when malformed. */
export function parseDuration(text: string): number | null {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) return null;
  return Number(match[1]) * UNITS[match[2]];
}

/** Parses a comma-separated schedule such as `5m,30m,2h`; null if any entry is malformed. */
export function parseDurationList(text: string): number[] | null {
  const parts = text.split(',').map((p) => parseDuration(p));
  return parts.some((p) => p === null) ? null : (parts as number[]);
}
