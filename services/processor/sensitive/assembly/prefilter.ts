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
