/**
 * What the processor writes in place of a redacted value (docs/processing.md): `[REDACTED]` for
 * `remove`/`replace` rules without a replacement, and for `mask` the value with every letter and
 * digit turned into `*`. The dashboard marks such values so a reader knows they were removed.
 */
export function isRedacted(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  if (v.includes('[REDACTED]')) return true;
  return v.length >= 3 && /\*/.test(v) && /^[*\s\-._@:/+()]+$/.test(v) && (v.match(/\*/g)?.length ?? 0) >= 3;
}
