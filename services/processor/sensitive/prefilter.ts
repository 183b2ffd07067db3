import { PREFILTER_WASM } from './prefilter.wasm.js';

/**
 * The prefilter: one pass over a long text (assembly/prefilter.ts, run as WebAssembly) that tells
 * which predefined patterns can match it, so that the engine runs only those patterns' regexes.
 * A JSON body with nothing to redact (most bodies) then costs one linear pass instead of one regex
 * pass per pattern (docs/sensitive-data.md, "Speed"). Each bit is a necessary condition of its
 * pattern, never an approximation: test/unit/sensitive-prefilter.test.ts checks every pattern's
 * matches against its bit.
 *
 * The same module also reads the structure of a record's JSON line (`lineMembers`): repeated keys
 * and where the members of `request` and `response` lie, for the sink (line-splice.ts).
 */

/** The bits (the same numbers as in assembly/prefilter.ts). */
export const PF = {
  at: 1,
  plus: 2,
  card: 4,
  ssn: 8,
  nanp: 16,
  trunk: 32,
  ipv4: 64,
  iban: 128,
  ipv6: 256,
  jwt: 512,
  auth: 1024,
  apiKey: 2048,
  /** a key-name fragment in a JSON property name (matchers.ts JSON_KEY_HINT) */
  jsonKey: 4096,
} as const;
/** Every bit: what a text gets when it is not prefiltered. */
export const PF_ALL = 0x1fff;

/**
 * Shorter texts are not prefiltered: their gates (`includes`) cost less than the call. Varying
 * header values (request ids, forwarded addresses) are long enough to gain (bench/README.md).
 */
export const PREFILTER_MIN_LENGTH = 24;
/** Longer texts get every bit (above the default ingest limit of 5 MiB per request). */
const PREFILTER_MAX_LENGTH = 8 << 20;
/** Memory kept between calls: a text needing more gets a fresh instance after its scan. */
const KEEP_BYTES = 4 << 20;

interface Exports {
  memory: { buffer: ArrayBuffer; grow(pages: number): number };
  init(): void;
  base(): number;
  scan(p: number, n: number): number;
  members(p: number, n: number, out: number, max: number): number;
}

/** The part of the WebAssembly API used here (the project's `lib` does not declare it). */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: object };
}

let wasm: Exports | null = null;
let base = 0;
let view = new Uint8Array(0);
/** The module's memory as i32 (lineMembers' results), renewed when the memory grows. */
let words = new Int32Array(0);
const encoder = new TextEncoder();

function load(): Exports | null {
  try {
    const api = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
    const module = new api.Module(Buffer.from(PREFILTER_WASM, 'base64'));
    const ex = new api.Instance(module, {}).exports as Exports;
    ex.init();
    base = ex.base();
    view = new Uint8Array(ex.memory.buffer, base);
    return ex;
  } catch {
    // Without WebAssembly every text gets every bit: the engine is as correct, only slower.
    return null;
  }
}
wasm = load();

// The same body is asked about twice in a row (mayHold, then the JSON walk's candidates).
let lastText = '';
let lastBits = PF_ALL;

/** Whether long texts are prefiltered (on unless turned off, e.g. to measure the difference). */
let enabled = true;
export function setPrefilterEnabled(on: boolean): void {
  enabled = on;
  lastText = '';
}

/** The prefilter bits of `text` (PF_ALL for short or very long texts). */
export function prefilterBits(text: string): number {
  if (text.length < PREFILTER_MIN_LENGTH || text.length > PREFILTER_MAX_LENGTH || !enabled) return PF_ALL;
  if (text === lastText) return lastBits;
  lastBits = scanBits(text);
  lastText = text;
  return lastBits;
}

/** The bits of any text, whatever its length (prefilterBits decides when they are worth it). */
export function scanBits(text: string): number {
  if (wasm === null || text.length > PREFILTER_MAX_LENGTH) return PF_ALL;
  reserve(text.length * 3); // UTF-8 bytes at most
  const { written } = encoder.encodeInto(text, view);
  const bits = wasm.scan(base, written);
  release();
  return bits;
}

/** Makes the module's memory hold `bytes` from `base`. */
function reserve(bytes: number): void {
  if (bytes > view.length) {
    wasm!.memory.grow(Math.ceil((bytes - view.length) / 65536));
    view = new Uint8Array(wasm!.memory.buffer, base);
  }
}

/** WebAssembly memory cannot shrink: after a very long input the grown instance is dropped. */
function release(): void {
  if (view.length > KEEP_BYTES) wasm = load();
}

/** What `lineMembers` found (assembly/prefilter.ts `members`). */
export const LINE_OK = 0;
export const LINE_REPEATED_KEY = 1;
export const LINE_UNSUPPORTED = 2;
const MAX_MEMBERS = 256;

/**
 * The structure of a record's JSON line (line-splice.ts): LINE_REPEATED_KEY when an object repeats
 * a key, LINE_UNSUPPORTED when it cannot tell (an escaped key, nesting deeper than 63, more than
 * 2,048 keys open at once, not one object), else LINE_OK and the members of the top-level
 * `request` and `response` objects, five numbers each: the part (1 request, 2 response), the key's
 * byte range inside its quotes, the value's byte range. The members are a view of the module's
 * memory: valid until the next call into the module.
 */
export function lineMembers(line: Uint8Array): { status: number; members: Int32Array | null } {
  if (wasm === null || line.length > PREFILTER_MAX_LENGTH) return { status: LINE_UNSUPPORTED, members: null };
  const at = (line.length + 15) & ~15;
  reserve(at + 4 + MAX_MEMBERS * 20);
  view.set(line);
  lastText = ''; // the bytes of the last text are gone
  const status = wasm.members(base, line.length, base + at, MAX_MEMBERS);
  let members: Int32Array | null = null;
  if (status === LINE_OK) {
    if (words.buffer !== view.buffer) words = new Int32Array(view.buffer);
    const first = (base + at) >> 2;
    members = words.subarray(first + 1, first + 1 + words[first]! * 5);
  }
  release();
  return { status, members };
}
