/**
 * The SET list of an UPDATE whose columns depend on the request (a PATCH sets the fields it gives),
 * written like a Where: `$?` placeholders are numbered as they are added, after the parameters the
 * statement already holds (`$1` the id, `$2` the workspace, ...), so SQL and parameters stay in step.
 */
export class SetList {
  private readonly parts: string[] = [];

  /** `params`: the statement's parameters so far; `assignments`: those always made, e.g. `updated_at = $3`. */
  constructor(
    readonly params: unknown[],
    ...assignments: string[]
  ) {
    this.parts.push(...assignments);
  }

  /** An assignment with its values, e.g. `add('name = $?', name)` or `add("active = false")`. */
  add(assignment: string, ...values: unknown[]): this {
    let i = 0;
    this.parts.push(assignment.replace(/\$\?/g, () => `$${this.params.length + ++i}`));
    this.params.push(...values);
    return this;
  }

  /** `column = value` when the value was given; a PATCH leaves an absent (undefined) field alone, and null clears it. */
  field(column: string, value: unknown): this {
    return value === undefined ? this : this.add(`${column} = $?`, value);
  }

  get sql(): string {
    return this.parts.join(', ');
  }
}
