/**
 * The conditions of a ClickHouse WHERE with the values of the `{name:Type}` parameters they name:
 * a condition and its values are added in one call, so none reaches the query without its value.
 * Condition texts are constants of the code; values travel only as query parameters.
 */
export class ClickHouseWhere {
  private readonly conditions: string[] = [];

  /** `params`: values the query names outside the conditions (a limit, an offset …). */
  constructor(readonly params: Record<string, unknown> = {}) {}

  /** Adds `condition` and the values of the parameters it names. */
  and(condition: string, values: Record<string, unknown> = {}): this {
    this.conditions.push(condition);
    Object.assign(this.params, values);
    return this;
  }

  /** The conditions joined by AND. */
  sql(): string {
    return this.conditions.join(' AND ');
  }
}
