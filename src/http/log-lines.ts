import { Writable } from 'node:stream';

/**
 * The service's log for a person at a terminal: one short line per request (`12:04:05 200 GET
 * /v1/products 3 ms`), none for the dashboard's own files when they load fine, and other records as
 * time, level and message. It reads the JSON lines the logger writes (already scrubbed of secrets,
 * logger.ts), so both formats log the same things. SVC_LOG_FORMAT chooses (docs/operations.md).
 */
const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };

interface Line {
  level: number;
  time: number;
  msg?: string;
  reqId?: string;
  req?: { method?: string; url?: string };
  res?: { statusCode?: number };
  responseTime?: number;
  err?: { message?: string };
}

const clock = (time: number) => new Date(time).toISOString().slice(11, 19);

/** A request for the dashboard's files that went well: a page load, not worth a line of its own. */
const quiet = (request: string, status: number) => status < 400 && /^GET \/dashboard\//.test(request);

export function terminalLines(out: NodeJS.WritableStream = process.stdout): Writable {
  // "incoming request" names the request, "request completed" its outcome: kept until it completes.
  const requests = new Map<string, string>();
  let rest = '';
  const format = (text: string): string | null => {
    let line: Line;
    try {
      line = JSON.parse(text) as Line;
    } catch {
      return text;
    }
    if (line.msg === 'incoming request' && line.reqId) {
      requests.set(line.reqId, `${line.req?.method ?? '?'} ${line.req?.url ?? '?'}`);
      return null;
    }
    if (line.msg === 'request completed' && line.reqId) {
      const request = requests.get(line.reqId) ?? '';
      requests.delete(line.reqId);
      const status = line.res?.statusCode ?? 0;
      return quiet(request, status) ? null : `${clock(line.time)} ${status} ${request} ${Math.round(line.responseTime ?? 0)} ms`;
    }
    const level = LEVELS[line.level] ?? String(line.level);
    return `${clock(line.time)} ${level} ${line.msg ?? ''}${line.err?.message ? `: ${line.err.message}` : ''}`;
  };
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      const lines = (rest + chunk.toString('utf8')).split('\n');
      rest = lines.pop()!;
      const shown = lines.map(format).filter((l): l is string => l !== null);
      if (shown.length === 0) return done();
      out.write(shown.join('\n') + '\n', () => done());
    },
  });
}
