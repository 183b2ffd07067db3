/**
 * What the processor writes in place of a redacted value (docs/processing.md, docs/rules.md):
 * `[REDACTED]` for `remove`/`replace` rules without a replacement, `[REDACTED:<type>]` for a
 * redaction by data type at the `full` level (`[REDACTED:password]`, `[REDACTED:customer-ref]`),
 * and for `mask` the value with every letter and digit turned into `*`. The dashboard marks such
 * values so a reader knows they were removed.
 */
const MARK = /\[REDACTED(?::[^\]\s]{1,100})?\]/;

export function isRedacted(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  if (MARK.test(v)) return true;
  return v.length >= 3 && /\*/.test(v) && /^[*\s\-._@:/+()]+$/.test(v) && (v.match(/\*/g)?.length ?? 0) >= 3;
}
