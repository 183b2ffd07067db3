// AssemblyScript (compiled to WebAssembly by `asc`, see ../prefilter.ts): one pass over a text's
// UTF-8 bytes that reports, as a bit set, which predefined patterns CAN match it. Each bit is a
// necessary condition of its pattern (a text without the bit holds no match), so the engine runs
// a pattern's regex only over texts whose bit is set. The bits are a superset by design: a set
// bit costs one regex run, a missing one would hide a secret (test/unit/sensitive-prefilter.test.ts
// checks every pattern against its bit).

// The bit numbers are shared with ../prefilter.ts.
const F_AT: u32 = 1; // '@' (email)
const F_PLUS: u32 = 2; // '+' (international phone)
const F_CARD: u32 = 4; // 13 digits, consecutive ones separated by at most one space or dash
const F_SSN: u32 = 8; // 9 such digits with a separator among them
const F_NANP: u32 = 16; // 3+ digits, one of [ .-], 4+ digits
const F_TRUNK: u32 = 32; // a digit group starting with 0 (2+ digits), one of [ .-], 2+ digits
const F_IPV4: u32 = 64; // four digit groups joined by single dots
const F_IBAN: u32 = 128; // two capitals after a non-word char, two digits, 8 more capitals/digits
const F_IPV6: u32 = 256; // '::' or hex ':' hex
const F_JWT: u32 = 512; // 'eyJ'
const F_AUTH: u32 = 1024; // 'arer', 'ARER', 'asic', 'ASIC' or 'oken'
const F_APIKEY: u32 = 2048; // '_', '-', 'SG.', 'AKIA', 'ASIA', 'ABIA', 'ACCA' or 'AIza'
const F_JSONKEY: u32 = 4096; // such a fragment between two quotes, the second followed by ':'

/** 32,768-bit set of 3-grams, indexed by the low 5 bits of each character (case-folded). */
const FRAGS: usize = memory.data(4096);

@inline function gram(a: u32, b: u32, c: u32): u32 {
  return ((a & 31) << 10) | ((b & 31) << 5) | (c & 31);
}

function addFragment(a: u32, b: u32, c: u32): void {
  const g = gram(a, b, c);
  store<u8>(FRAGS + (g >> 3), load<u8>(FRAGS + (g >> 3)) | (<u8>1 << <u8>(g & 7)));
}

/** The first three letters of each fragment of the key-name hint (matchers.ts KEY_HINT). */
export function init(): void {
  initActions();
  addFragment(0x70, 0x61, 0x73); // pas(s)
  addFragment(0x70, 0x77, 0x64); // pwd
  addFragment(0x73, 0x65, 0x63); // sec(ret)
  addFragment(0x74, 0x6f, 0x6b); // tok(en)
  addFragment(0x6b, 0x65, 0x79); // key
  addFragment(0x63, 0x72, 0x65); // cre(dential)
  addFragment(0x63, 0x6f, 0x6f); // coo(kie)
  addFragment(0x73, 0x65, 0x73); // ses(sion)
  addFragment(0x70, 0x69, 0x6e); // pin
  addFragment(0x63, 0x76, 0x76); // cvv
  addFragment(0x63, 0x76, 0x63); // cvc
  addFragment(0x6f, 0x74, 0x70); // otp
  addFragment(0x61, 0x75, 0x74); // aut(h)
}

@inline function isDigit(c: u32): bool {
  return c - 48 < 10;
}
@inline function isUpper(c: u32): bool {
  return c - 65 < 26;
}
@inline function isWord(c: u32): bool {
  return c - 48 < 10 || (c | 32) - 97 < 26 || c == 95;
}
@inline function isHex(c: u32): bool {
  return c - 48 < 10 || (c | 32) - 97 < 6;
}

/** What a byte starts (the branches of `scan`); 0 for most letters and punctuation. */
const ACT: usize = memory.data(256);
const A_DIGIT: u8 = 1;
const A_UPPER: u8 = 2;
const A_COLON: u8 = 3;
const A_OTHER: u8 = 4; // a byte some literal gate starts or ends with

function initActions(): void {
  for (let c: u32 = 48; c < 58; c++) store<u8>(ACT + c, A_DIGIT);
  for (let c: u32 = 65; c < 91; c++) store<u8>(ACT + c, A_UPPER);
  store<u8>(ACT + 58, A_COLON);
  // @ + _ - b k z: email, phone, API keys, Bearer/Basic, Token, AIza
  store<u8>(ACT + 64, A_OTHER);
  store<u8>(ACT + 43, A_OTHER);
  store<u8>(ACT + 95, A_OTHER);
  store<u8>(ACT + 45, A_OTHER);
  store<u8>(ACT + 0x62, A_OTHER);
  store<u8>(ACT + 0x6b, A_OTHER);
  store<u8>(ACT + 0x7a, A_OTHER);
}

@inline function at(p: usize, i: usize): u32 {
  return <u32>load<u8>(p + i);
}

/** The four bytes from `i` as a big-endian number ('abcd' = 0x61626364); 0 past the end. */
@inline function word(p: usize, i: usize, n: usize): u32 {
  return i + 4 <= n ? bswap<u32>(load<u32>(p + i)) : 0;
}

/**
 * Whether the ':' at `i` ends a JSON key holding a key-name fragment: white space back to a
 * quote, then the text back to the quote before it (or the start) holds one of the fragments'
 * first three letters, in any case.
 */
function keyBefore(p: usize, i: usize): bool {
  let e = i;
  while (e > 0) {
    const d = at(p, e - 1);
    if (d != 32 && d != 9 && d != 10 && d != 13) break;
    e--;
  }
  if (e == 0 || at(p, e - 1) != 34) return false;
  e--; // the closing quote
  let s = e;
  while (s > 0 && at(p, s - 1) != 34) s--;
  for (let k = s + 2; k < e; k++) {
    const g = gram(at(p, k - 2), at(p, k - 1), at(p, k));
    if ((load<u8>(FRAGS + (g >> 3)) >> <u8>(g & 7)) & 1) return true;
  }
  return false;
}

/**
 * Whether an IBAN-like run starts at `i` (a capital after a non-word character): a second
 * capital, two digits, then at least 8 capitals or digits, single spaces allowed between them.
 */
function ibanAt(p: usize, i: usize, n: usize): bool {
  if (i + 12 > n || !isUpper(at(p, i + 1)) || !isDigit(at(p, i + 2)) || !isDigit(at(p, i + 3)))
    return false;
  let count: u32 = 0;
  let space = false;
  for (let j = i + 4; j < n; j++) {
    const d = at(p, j);
    if (isUpper(d) || isDigit(d)) {
      if (++count >= 8) return true;
      space = false;
    } else if (d == 32 && !space) space = true;
    else return false;
  }
  return false;
}

/** The bits of the `n` bytes at `p`. */
export function scan(p: usize, n: usize): u32 {
  let f: u32 = 0;
  let grp: u32 = 0; // length of the last digit group
  let grpFirst: u32 = 0; // its first digit
  let prevGrp: u32 = 0; // the group before it when one of [ .-] joins them, else 0
  let prevFirst: u32 = 0;
  let dots: u32 = 0; // groups joined by single dots, up to the last one
  let card: u32 = 0; // digits in the last run of groups joined by single [ -]
  let cardSeps: u32 = 0;
  let i: usize = 0;
  while (i < n) {
    const c = at(p, i);
    const a = load<u8>(ACT + c);
    if (a == 0) {
      i++;
      continue;
    }
    if (a == A_DIGIT) {
      // A whole digit group at once, then how it joins the group before it.
      let j = i + 1;
      while (j < n && at(p, j) - 48 < 10) j++;
      const len = <u32>(j - i);
      const prev = i > 0 ? at(p, i - 1) : 0;
      if ((prev == 32 || prev == 45 || prev == 46) && i > 1 && at(p, i - 2) - 48 < 10) {
        prevGrp = grp;
        prevFirst = grpFirst;
        if (prev == 46) {
          dots++;
          card = len;
          cardSeps = 0;
        } else {
          dots = 1;
          card += len;
          cardSeps++;
        }
      } else {
        prevGrp = 0;
        dots = 1;
        card = len;
        cardSeps = 0;
      }
      grp = len;
      grpFirst = c;
      if (card >= 13) f |= F_CARD;
      if (card >= 9 && cardSeps != 0) f |= F_SSN;
      if (prevGrp >= 3 && grp >= 4) f |= F_NANP;
      if (prevFirst == 48 && prevGrp >= 2 && grp >= 2) f |= F_TRUNK;
      if (dots >= 4) f |= F_IPV4;
      i = j;
      continue;
    }
    if (a == A_UPPER) {
      if ((i == 0 || !isWord(at(p, i - 1))) && ibanAt(p, i, n)) f |= F_IBAN;
      if (c == 0x41) {
        const w = word(p, i, n); // AKIA ASIA ABIA ACCA AIza
        if (w == 0x414b4941 || w == 0x41534941 || w == 0x41424941 || w == 0x41434341 || w == 0x41497a61)
          f |= F_APIKEY;
      } else if (c == 0x42) {
        const w = word(p, i + 1, n); // (B)EARE(R) (B)ASIC (B)eare(r) (B)asic
        if (w == 0x45415245 || w == 0x41534943 || w == 0x65617265 || w == 0x61736963) f |= F_AUTH;
      } else if (c == 0x4a) {
        if (i > 1 && at(p, i - 1) == 0x79 && at(p, i - 2) == 0x65) f |= F_JWT; // eyJ
      } else if (c == 0x47) {
        if (i > 0 && i + 1 < n && at(p, i - 1) == 0x53 && at(p, i + 1) == 0x2e) f |= F_APIKEY; // SG.
      }
    } else if (a == A_COLON) {
      if (i + 1 < n) {
        const next = at(p, i + 1);
        if (next == 58 || (i > 0 && isHex(next) && isHex(at(p, i - 1)))) f |= F_IPV6;
      }
      if (keyBefore(p, i)) f |= F_JSONKEY;
    } else {
      // A_OTHER
      if (c == 64) f |= F_AT;
      else if (c == 43) f |= F_PLUS;
      else if (c == 95 || c == 45) f |= F_APIKEY;
      else if (c == 0x62) {
        const w = word(p, i + 1, n); // (b)eare(r) (b)asic
        if (w == 0x65617265 || w == 0x61736963) f |= F_AUTH;
      } else if (c == 0x6b) {
        if (i > 0 && at(p, i - 1) == 0x6f && i + 2 < n && at(p, i + 1) == 0x65 && at(p, i + 2) == 0x6e)
          f |= F_AUTH; // (T|t)oken
      } else if (c == 0x7a) {
        if (i > 1 && at(p, i - 1) == 0x49 && at(p, i - 2) == 0x41 && i + 1 < n && at(p, i + 1) == 0x61)
          f |= F_APIKEY; // AIza
      }
    }
    i++;
  }
  return f;
}

/** Where the caller writes the bytes: the first byte after the static data. */
export function base(): usize {
  return (__heap_base + 15) & ~15;
}

// ---------------------------------------------------------------------------------------------
// The structure of a record line (services/processor/line-splice.ts): whether any object repeats
// a key (the parse keeps the last value, so an earlier one would stay in a stored line unseen), and
// where each member of the top-level `request` and `response` objects lies.

const ST_OK: i32 = 0;
const ST_REPEATED: i32 = 1; // an object repeats a key
const ST_UNSUPPORTED: i32 = 2; // an escaped key, or deeper / more keys than the tables hold, or not an object

const MAX_DEPTH: i32 = 64;
const MAX_KEYS: i32 = 2048; // keys of the open objects together
const KIND: usize = memory.data(64); // per depth: 1 object, 2 array
const KEY_BASE: usize = memory.data(64 * 4); // per depth: the first key of its object in the tables
const PART: usize = memory.data(64); // per depth: 1 request, 2 response, 0 neither
const KEY_START: usize = memory.data(2048 * 4);
const KEY_LEN: usize = memory.data(2048 * 4);
const KEY_HASH: usize = memory.data(2048 * 4);

/** Whether the `len` bytes at `a` and at `b` are equal. */
function same(a: usize, b: usize, len: usize): bool {
  for (let k: usize = 0; k < len; k++) if (load<u8>(a + k) != load<u8>(b + k)) return false;
  return true;
}

@inline function isWs(c: u32): bool {
  return c == 32 || c == 9 || c == 10 || c == 13;
}

/**
 * Reads the JSON object at `p` (`n` bytes). Returns ST_OK, ST_REPEATED or ST_UNSUPPORTED; with
 * ST_OK, writes at `out` the number of members of `request` / `response`, then five i32 per
 * member: the part (1 request, 2 response), the key's first byte and the byte after it (inside the
 * quotes), the value's first byte and the byte after it. At most `max` members are written (more
 * give ST_UNSUPPORTED).
 */
export function members(p: usize, n: usize, out: usize, max: i32): i32 {
  let depth: i32 = 0;
  let keys: i32 = 0; // entries in the key tables
  let expectKey = false; // the next string in the current object is a key
  let partKey: u8 = 0; // the part the last key of the top-level object names
  let valueOf: i32 = -1; // the member whose value starts at the next non-space byte (-1: none)
  let open: i32 = -1; // the member whose value is being read (-1: none)
  let count: i32 = 0;
  let i: usize = 0;
  while (i < n && isWs(<u32>load<u8>(p + i))) i++;
  if (i >= n || load<u8>(p + i) != 0x7b) return ST_UNSUPPORTED;
  for (; i < n; i++) {
    const c = <u32>load<u8>(p + i);
    if (isWs(c)) continue;
    if (valueOf >= 0) {
      store<i32>(out + 4 + <usize>valueOf * 20 + 12, <i32>i);
      open = valueOf;
      valueOf = -1;
    }
    if (c == 0x22) {
      const s = i;
      let escaped = false;
      i++;
      while (i < n) {
        if (i + 16 <= n) {
          // Sixteen bytes at once: their backslashes and quotes in order, each backslash taking
          // the byte after it, until a quote no backslash took.
          const v = v128.load(p + i);
          const bs = <u32>i8x16.bitmask(i8x16.eq(v, i8x16.splat(0x5c)));
          let m = bs | <u32>i8x16.bitmask(i8x16.eq(v, i8x16.splat(0x22)));
          let step: usize = 16;
          let quote = false;
          while (m != 0) {
            const k = ctz(m);
            const bit: u32 = 1 << k;
            if ((bs & bit) == 0) {
              step = <usize>k;
              quote = true;
              break;
            }
            escaped = true;
            if (k == 15) {
              step = 17; // the byte it takes opens the next block
              break;
            }
            m &= ~(bit | (bit << 1));
          }
          i += step;
          if (quote) break;
          continue;
        }
        const d = <u32>load<u8>(p + i);
        if (d == 0x5c) {
          escaped = true;
          i += 2;
          continue;
        }
        if (d == 0x22) break;
        i++;
      }
      if (i >= n) return ST_UNSUPPORTED;
      if (expectKey) {
        if (escaped) return ST_UNSUPPORTED;
        const ks = s + 1;
        const kl = i - ks;
        let h: u32 = 2166136261;
        for (let k: usize = 0; k < kl; k++) h = (h ^ <u32>load<u8>(p + ks + k)) * 16777619;
        const from = load<i32>(KEY_BASE + <usize>depth * 4);
        for (let k = from; k < keys; k++) {
          const o = <usize>k * 4;
          if (load<u32>(KEY_HASH + o) == h && <usize>load<i32>(KEY_LEN + o) == kl)
            if (same(p + <usize>load<i32>(KEY_START + o), p + ks, kl)) return ST_REPEATED;
        }
        if (keys >= MAX_KEYS) return ST_UNSUPPORTED;
        const o = <usize>keys * 4;
        store<u32>(KEY_HASH + o, h);
        store<i32>(KEY_START + o, <i32>ks);
        store<i32>(KEY_LEN + o, <i32>kl);
        keys++;
        expectKey = false;
        if (depth == 1) {
          partKey = 0;
          if (kl == 7 && (load<u64>(p + ks) & 0xffffffffffffff) == 0x74736575716572) partKey = 1; // request
          if (kl == 8 && load<u64>(p + ks) == 0x65736e6f70736572) partKey = 2; // response
        } else if (depth == 2 && load<u8>(PART + <usize>depth) != 0) {
          if (count >= max) return ST_UNSUPPORTED;
          const m = out + 4 + <usize>count * 20;
          store<i32>(m, <i32>load<u8>(PART + <usize>depth));
          store<i32>(m + 4, <i32>ks);
          store<i32>(m + 8, <i32>i);
          count++;
        }
      }
      continue;
    }
    if (c == 0x3a) {
      // A member of `request` / `response`: its value starts at the next non-space byte.
      if (depth == 2 && load<u8>(PART + <usize>depth) != 0) valueOf = count - 1;
      continue;
    }
    if (c == 0x2c || c == 0x7d || c == 0x5d) {
      if (depth == 2 && open >= 0 && c != 0x5d) {
        let e = i;
        while (e > 0 && isWs(<u32>load<u8>(p + e - 1))) e--;
        store<i32>(out + 4 + <usize>open * 20 + 16, <i32>e);
        open = -1;
      }
      // After a comma an object expects a key; after a closing bracket, a comma or a bracket.
      expectKey = c == 0x2c && load<u8>(KIND + <usize>depth) == 1;
      if (c == 0x2c) continue;
      if (depth == 0) return ST_UNSUPPORTED;
      keys = load<i32>(KEY_BASE + <usize>depth * 4);
      depth--;
      if (depth == 0) {
        // The top-level object ends: only white space may follow.
        for (let k = i + 1; k < n; k++) if (!isWs(<u32>load<u8>(p + k))) return ST_UNSUPPORTED;
        store<i32>(out, count);
        return ST_OK;
      }
      continue;
    }
    if (c == 0x7b || c == 0x5b) {
      if (depth + 1 >= MAX_DEPTH) return ST_UNSUPPORTED;
      depth++;
      store<u8>(KIND + <usize>depth, c == 0x7b ? 1 : 2);
      store<i32>(KEY_BASE + <usize>depth * 4, keys);
      store<u8>(PART + <usize>depth, depth == 2 && c == 0x7b ? partKey : 0);
      expectKey = c == 0x7b;
      continue;
    }
  }
  return ST_UNSUPPORTED;
}
