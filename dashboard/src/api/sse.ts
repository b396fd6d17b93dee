/** One Server-Sent Events message: its data lines joined, and the last event id seen. */
export interface SseMessage {
  id: string | null;
  data: string;
}

/**
 * An incremental parser of `text/event-stream`, per the HTML standard: lines end with CRLF, LF or
 * CR (a CR at the end of a chunk waits for the next, which may start with LF); `:` lines are
 * comments (keep-alives); a blank line dispatches the message when it has data. `retry` and `event`
 * are not used by this service's stream and are ignored.
 */
export class SseParser {
  private pending = '';
  private data: string[] = [];
  private lastId: string | null = null;

  push(text: string): SseMessage[] {
    this.pending += text;
    const out: SseMessage[] = [];
    let start = 0;
    for (;;) {
      const cr = this.pending.indexOf('\r', start);
      const lf = this.pending.indexOf('\n', start);
      const end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
      if (end < 0) break;
      // A CR last in the buffer may be the first half of a CRLF.
      if (end === cr && end === this.pending.length - 1) break;
      const line = this.pending.slice(start, end);
      start = end + (end === cr && this.pending[end + 1] === '\n' ? 2 : 1);
      const message = this.line(line);
      if (message) out.push(message);
    }
    this.pending = this.pending.slice(start);
    return out;
  }

  private line(line: string): SseMessage | null {
    if (line === '') {
      if (this.data.length === 0) return null;
      const message = { id: this.lastId, data: this.data.join('\n') };
      this.data = [];
      return message;
    }
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.lastId = value || null;
    return null;
  }
}
