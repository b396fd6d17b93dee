/**
 * A WHERE clause built from conditions written with `$?` placeholders, numbered as they are added:
 * `where.add('type = $?', type)` keeps SQL readable and parameters in step.
 */
export class Where {
  private readonly parts: string[] = [];
  readonly params: unknown[] = [];

  add(condition: string, ...values: unknown[]): this {
    let i = 0;
    this.parts.push(condition.replace(/\$\?/g, () => `$${this.params.length + ++i}`));
    this.params.push(...values);
    return this;
  }

  /** A placeholder for one more parameter, e.g. for LIMIT. */
  param(value: unknown): string {
    this.params.push(value);
    return `$${this.params.length}`;
  }

  get sql(): string {
    return this.parts.length ? `WHERE ${this.parts.join(' AND ')}` : '';
  }
}
