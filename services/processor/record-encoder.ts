import type { BucketRules } from './compiled-rules.js';
import type { DecodedRecord } from './decoder.js';
import { lineStorable, replacedPartsLine } from './line-splice.js';
import type { StoredRecord } from './pipeline.js';

/**
 * The sink's encoder: the JSON text to store for a record the steps kept, from the record they
 * returned and the line and fields received. The steps say nothing about storage; this compares.
 *
 * - every top-level field of the record that the line does not hold (the header's `accountSid` and
 *   `bucketSid`, a derived `endpoint`, `redacted`, `workflowExecutions`, a new step's field) is
 *   written as a member before the line's closing brace, in the record's key order;
 * - `request` / `response` replaced by other objects: each of their members holding a new value
 *   is written in place in the line (line-splice.ts), the rest (the bodies, most of a record's
 *   bytes) copied as received;
 * - anything else (a received field with another value or removed, a part with a member added or
 *   removed, a line that is not a plain object ending in `}`, a line that repeats a key where the
 *   parse kept only one value) makes the encoder answer undefined: the sink serialises the record.
 *
 * `checkLine`: rules read the record's content (redaction rules apply to its bucket), so a line
 * stored as received must not hold a value the parse dropped (a repeated key) that no rule saw.
 * A line with members written in place is always checked (line-splice.ts).
 */
export function encodeKept(
  decoded: Pick<DecodedRecord, 'line' | 'received'>,
  record: StoredRecord,
  checkLine: boolean,
): Buffer | undefined {
  const { line, received } = decoded;
  let extra = '';
  let parts = false;
  let held = 0;
  for (const key in record) {
    const value = record[key];
    if (Object.hasOwn(received, key)) {
      held++;
      if (received[key] === value) continue;
      if ((key === 'request' || key === 'response') && value !== undefined) {
        parts = true;
        continue;
      }
      return undefined;
    }
    if (value === undefined) continue;
    extra += `,${JSON.stringify(key)}:${JSON.stringify(value)}`;
  }
  // A received field the steps removed: the line still holds it.
  let fields = 0;
  for (const key in received) if (Object.hasOwn(received, key)) fields++;
  if (held !== fields) return undefined;

  if (!parts) return !checkLine || lineStorable(line) ? withMembers(line, extra) : undefined;
  // The replaced members and the new fields are written in one copy of the line.
  if (extra === '') return replacedPartsLine(line, received, record);
  const at = closingBrace(line);
  return at === undefined ? undefined : replacedPartsLine(line, received, record, { at, text: extra });
}

/** Whether the bucket's rules read a record's content (so its received line is checked). */
export const rulesReadContent = (rules: BucketRules): boolean =>
  rules.redactions.length > 0 || rules.sensitive !== null;

const CLOSE_BRACE = 0x7d;
const OPEN_BRACE = 0x7b;
const isSpace = (b: number) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;

/** The index of the line's closing brace, or undefined unless it is a non-empty object. */
function closingBrace(line: Buffer): number | undefined {
  let end = line.length - 1;
  while (end > 0 && isSpace(line[end]!)) end--;
  if (line[end] !== CLOSE_BRACE) return undefined;
  let before = end - 1;
  while (before > 0 && isSpace(line[before]!)) before--;
  if (before <= 0 || line[before] === OPEN_BRACE) return undefined;
  return end;
}

/** `line` with `extra` written before its closing brace (undefined: no place for it). */
function withMembers(line: Buffer, extra: string): Buffer | undefined {
  if (extra === '') return line;
  const end = closingBrace(line);
  if (end === undefined) return undefined;
  const n = Buffer.byteLength(extra);
  const out = Buffer.allocUnsafe(line.length + n);
  line.copy(out, 0, 0, end);
  out.write(extra, end);
  line.copy(out, end + n, end);
  return out;
}
