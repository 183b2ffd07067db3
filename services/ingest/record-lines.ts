/**
 * The JSON text of each ingested record, taken from the request body's bytes instead of
 * serialising the parsed record again (JSON.stringify of a 2.5 KB record was ~18 µs of the ingest
 * process's ~70 per record, bench profile 2026-11-22). The body has already been parsed by
 * JSON.parse, so it is valid JSON: the scan below only has to find where things start and end.
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const NEWLINE = 0x0a;

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(b: Buffer, i: number): number {
  while (i < b.length && isSpace(b[i]!)) i++;
  return i;
}

/**
 * Index just past the string whose opening quote is at `i`. A plain byte loop: captured bodies are
 * JSON text inside JSON strings, so nearly every quote is escaped and searching quote to quote
 * (indexOf, then counting backslashes) was slower than this.
 */
function skipString(b: Buffer, i: number): number {
  const n = b.length;
  for (let k = i + 1; k < n; k++) {
    const c = b[k];
    if (c === BACKSLASH) k++;
    else if (c === QUOTE) return k + 1;
  }
  throw new Error('unterminated string');
}

/** Index just past the JSON value that starts at `i` (no leading space). */
function skipValue(b: Buffer, i: number): number {
  const c = b[i];
  if (c === QUOTE) return skipString(b, i);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    for (let k = i; k < b.length;) {
      const d = b[k]!;
      if (d === QUOTE) {
        k = skipString(b, k);
        continue;
      }
      if (d === 0x7b || d === 0x5b) depth++;
      else if (d === 0x7d || d === 0x5d) {
        depth--;
        if (depth === 0) return k + 1;
      }
      k++;
    }
    throw new Error('unterminated container');
  }
  // number, true, false, null
  let k = i;
  while (k < b.length) {
    const d = b[k]!;
    if (d === 0x2c || d === 0x7d || d === 0x5d || isSpace(d)) break;
    k++;
  }
  return k;
}

/**
 * Byte ranges [start, end) of the elements of the array under top-level `key` in the JSON object
 * `body` (the last occurrence, as JSON.parse keeps), or undefined when the body is not such an
 * object or a top-level key uses escapes (then the caller serialises instead).
 */
export function arrayElementRanges(body: Buffer, key: string): [number, number][] | undefined {
  try {
    const want = Buffer.from(key);
    let i = skipSpace(body, 0);
    if (body[i] !== 0x7b) return undefined;
    i = skipSpace(body, i + 1);
    let found: [number, number][] | undefined;
    if (body[i] === 0x7d) return undefined;
    for (;;) {
      if (body[i] !== QUOTE) return undefined;
      const keyEnd = skipString(body, i);
      const raw = body.subarray(i + 1, keyEnd - 1);
      if (raw.includes(BACKSLASH)) return undefined;
      i = skipSpace(body, keyEnd);
      if (body[i] !== 0x3a) return undefined;
      i = skipSpace(body, i + 1);
      if (raw.equals(want)) {
        if (body[i] !== 0x5b) return undefined;
        const ranges: [number, number][] = [];
        i = skipSpace(body, i + 1);
        if (body[i] === 0x5d) i++;
        else
          for (;;) {
            const end = skipValue(body, i);
            ranges.push([i, end]);
            i = skipSpace(body, end);
            if (body[i] === 0x2c) {
              i = skipSpace(body, i + 1);
              continue;
            }
            if (body[i] !== 0x5d) return undefined;
            i++;
            break;
          }
        found = ranges;
      } else {
        i = skipValue(body, i);
      }
      i = skipSpace(body, i);
      if (body[i] === 0x2c) {
        i = skipSpace(body, i + 1);
        continue;
      }
      if (body[i] !== 0x7d) return undefined;
      return found;
    }
  } catch {
    return undefined;
  }
}

/**
 * One record's line for the Kafka message (one line per record, services/ingest/record.publisher.ts):
 * its bytes from the body, with the fields ingest added (`added`, none of them present in the
 * record) written first, and raw newlines (whitespace between tokens; JSON strings never hold
 * one) turned into spaces.
 */
export function recordLine(
  body: Buffer,
  [start, end]: [number, number],
  added: Record<string, unknown>,
): Buffer {
  const keys = Object.keys(added);
  // body[start] is the record's opening brace (the caller checked the parsed value is an object).
  let rest = body.subarray(start + 1, end);
  if (rest.includes(NEWLINE)) {
    rest = Buffer.from(rest);
    for (let k = rest.indexOf(NEWLINE); k >= 0; k = rest.indexOf(NEWLINE, k + 1)) rest[k] = 0x20;
  }
  if (keys.length === 0) return Buffer.concat([OPEN, rest]);
  const head = JSON.stringify(added);
  const empty = rest[skipSpace(rest, 0)] === 0x7d;
  return Buffer.concat([Buffer.from(empty ? head.slice(0, -1) : `${head.slice(0, -1)},`), rest]);
}

const OPEN = Buffer.from('{');
