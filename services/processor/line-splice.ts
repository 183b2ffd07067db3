import { LINE_OK, lineMembers } from './sensitive/prefilter.js';
import type { StoredRecord } from './pipeline.js';

/**
 * Reusing a record's received line when rules looked at its content or the steps replaced members
 * of its parts (the sink's encoder, record-encoder.ts).
 * One pass over the line (`lineMembers`, WebAssembly) tells whether any object in it repeats a key
 * and where each member of `request` and `response` lies.
 *
 * A repeated key matters because the parse keeps only its last value: an earlier one would stay
 * in a stored line although no rule saw it. Such a line is never stored as received.
 */

/** Whether a line the rules found nothing in may be stored as received: no key repeated in it. */
export function lineStorable(line: Buffer): boolean {
  return lineMembers(line).status === LINE_OK;
}

/**
 * The stored text of a record whose steps replaced members of `request` / `response` with new
 * values in copies of those objects (redaction, or any step's rewrite): the received line with
 * each replaced member's value written in place, so the rest (the bodies, most of a record's
 * bytes) is copied as received instead of escaped again. Undefined (the sink serialises the record) when the line
 * repeats a key, has an escaped key, or does not hold a replaced member where the parse found it.
 * `insert` (the sink's added top-level fields) is written at its byte offset in the same copy.
 */
export function replacedPartsLine(
  line: Buffer,
  received: Readonly<Record<string, unknown>>,
  record: StoredRecord,
  insert?: { at: number; text: string },
): Buffer | undefined {
  const pairs: { part: number; key: string; next: unknown }[] = [];
  for (const [part, name] of [
    [1, 'request'],
    [2, 'response'],
  ] as const) {
    const was = received[name];
    const now = record[name];
    if (was === now) continue;
    if (!isPlainObject(was) || !isPlainObject(now)) return undefined;
    const keys = Object.keys(now);
    if (keys.length !== Object.keys(was).length) return undefined;
    for (const key of keys) {
      if (!Object.hasOwn(was, key)) return undefined;
      if (was[key] === now[key]) continue;
      if (now[key] === undefined) return undefined;
      pairs.push({ part, key, next: now[key] });
    }
  }
  if (pairs.length === 0 && !insert) return lineStorable(line) ? line : undefined;
  const { status, members } = lineMembers(line);
  if (status !== LINE_OK || members === null) return undefined;

  const edits: { start: number; end: number; text: Buffer }[] = [];
  for (const { part, key, next } of pairs) {
    let found = -1;
    for (let m = 0; m < members.length; m += 5)
      if (
        members[m] === part &&
        members[m + 2]! - members[m + 1]! === Buffer.byteLength(key) &&
        line.toString('utf8', members[m + 1], members[m + 2]) === key
      ) {
        found = m;
        break;
      }
    if (found < 0) return undefined;
    edits.push({
      start: members[found + 3]!,
      end: members[found + 4]!,
      text: Buffer.from(JSON.stringify(next)),
    });
  }
  if (insert) edits.push({ start: insert.at, end: insert.at, text: Buffer.from(insert.text) });
  edits.sort((a, b) => a.start - b.start);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const e of edits) {
    pieces.push(line.subarray(from, e.start), e.text);
    from = e.end;
  }
  pieces.push(line.subarray(from));
  return Buffer.concat(pieces);
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
