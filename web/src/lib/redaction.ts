/**
 * What the processor writes in place of a redacted value (docs/processing.md, docs/rules.md):
 * `[REDACTED]` for `remove`/`replace` rules without a replacement, `[REDACTED:<type>]` for a
 * redaction by data type at the `full` level (`[REDACTED:password]`, `[REDACTED:customer-ref]`),
 * for `mask` the value with every letter and digit turned into `*`, and for `partial` the type's
 * partial form, a masked run beside the part it keeps (`**** **** **** 1111`,
 * `****.***@example.com`, `203.0.113.**`, `sk_live_********`). The dashboard marks such values so a
 * reader knows they were removed.
 */
const MARK = /\[REDACTED(?::[^\]\s]{1,100})?\]/;
/** A run of two or more `*` standing as a token of its own (not `**bold**` markdown). */
const MASKED_RUN = /(?:^|[^\p{L}\p{N}*])\*{2,}(?=$|[^\p{L}\p{N}*])/u;

export function isRedacted(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  if (MARK.test(v)) return true;
  if (v.length <= 200 && MASKED_RUN.test(v)) return true;
  return v.length >= 3 && /\*/.test(v) && /^[*\s\-._@:/+()]+$/.test(v) && (v.match(/\*/g)?.length ?? 0) >= 3;
}
