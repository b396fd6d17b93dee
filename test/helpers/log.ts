import { Writable } from 'node:stream';

/** A log destination that keeps every line, for tests that read what the service logged. */
export class LogCapture extends Writable {
  private readonly chunks: string[] = [];

  override _write(chunk: Buffer | string, _encoding: BufferEncoding, done: () => void): void {
    this.chunks.push(chunk.toString());
    done();
  }

  get text(): string {
    return this.chunks.join('');
  }

  /** The JSON records logged so far. */
  get records(): Record<string, unknown>[] {
    return this.text
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }
}
