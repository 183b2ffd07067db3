import { PF } from './prefilter.js';
import {
  cardValid,
  emailValid,
  ibanValid,
  ipv4Valid,
  ipv6Valid,
  jwtValid,
  phoneIntlValid,
  phoneNanpValid,
  phoneTrunkValid,
  ssnValid,
} from './validators.js';

/**
 * The predefined sensitive-data types (docs/sensitive-data.md). Each is a detector:
 * - a **value** detector finds its shape anywhere in a text (a JSON string, a header value, a query
 *   value, a text body) with one or more patterns, then a validator rejects look-alikes;
 * - a **key** detector recognises the NAME of a field (JSON property, XML element or attribute,
 *   header, query or form parameter, `name=value` / `name: value` in text) and redacts its value.
 * `authorization` is both: a value detector for `Bearer …`/`Basic …` anywhere, and a key detector
 * for the `Authorization` headers.
 *
 * Engine: vetted JS RegExp (irregexp), chosen over re2js for predefined patterns because it is
 * several times faster on typical records (measured by test/bench/sensitive.ts) and these patterns
 * are linear by construction, which test/unit/sensitive-linear.test.ts checks on hostile inputs:
 * 1. every quantifier is bounded (`{1,64}`, never `+`/`*` over an open class), so the work per
 *    start position is bounded by a constant;
 * 2. a lookbehind refuses a start inside a run of the pattern's own leading characters, so one run
 *    is scanned from one start, not from each of its characters;
 * 3. repeated groups are separated by a mandatory, distinct separator (no `(a+)+` ambiguity).
 * Custom patterns never run here: they run in re2js (custom.ts).
 */

export const PREDEFINED_TYPES = [
  'email',
  'card',
  'ssn',
  'phone',
  'ipv4',
  'ipv6',
  'jwt',
  'authorization',
  'api_key',
  'iban',
  'password',
] as const;
export type PredefinedType = (typeof PREDEFINED_TYPES)[number];

export const isPredefinedType = (t: string): t is PredefinedType =>
  (PREDEFINED_TYPES as readonly string[]).includes(t);

export interface DetectorPattern {
  /** global, never sticky; `lastIndex` is reset before each scan */
  re: RegExp;
  validate?: (match: string) => boolean;
  /** the shortest text the pattern can match: shorter texts are not scanned */
  minLength: number;
  /** a cheap necessary condition (`includes`), checked before the regex runs */
  gate?: (text: string) => boolean;
  /** the prefilter's bit for this pattern (prefilter.ts): a long text without it is not scanned */
  bit: number;
}

export interface Detector {
  type: PredefinedType;
  /** one line for the catalogue */
  description: string;
  /** what the pattern finds and what validation rejects, for the catalogue and the docs */
  validation: string;
  /** what `partial` keeps */
  partial: string;
  /** value patterns (empty for a key-only detector) */
  patterns: DetectorPattern[];
  /** key detector: whether a field NAME designates this type (its whole value is redacted) */
  key?: (name: string) => boolean;
  /** the `partial` level of a matched text (same length; kept characters as they are) */
  keepPartial: (match: string) => string;
  examples: { matches: string[]; nonMatches: string[] };
}

const ALNUM = /[\p{L}\p{N}]/u;

/** Letters and digits become `*`; separators and punctuation stay. */
export function maskText(s: string): string {
  let out = '';
  for (const ch of s) out += ALNUM.test(ch) ? '*' : ch;
  return out;
}

/** Masks every letter and digit except the last `keep` of them. */
function maskAllButLast(s: string, keep: number, what: RegExp = ALNUM): string {
  const chars = [...s];
  let seen = 0;
  for (let i = chars.length - 1; i >= 0; i--) {
    if (!what.test(chars[i]!)) continue;
    if (seen++ >= keep) chars[i] = '*';
  }
  return chars.join('');
}

/** Keeps `prefix` characters as they are and masks the rest. */
const keepPrefix = (s: string, n: number): string => s.slice(0, n) + maskText(s.slice(n));

const DIGIT = /\d/;

// ---------------------------------------------------------------------------------------------
// Patterns. `B` = the lookbehind of rule 2 above, one per leading class.

const EMAIL =
  /(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?){0,8}\.[A-Za-z]{2,24}(?![A-Za-z0-9-])/g;

const CARD = /(?<![0-9A-Za-z_.])[0-9](?:[ -]?[0-9]){12,18}(?![0-9A-Za-z_]|[.,][0-9])/g;

// The same separator twice, without a backreference (the patterns are also joined into one regex).
const SSN = /(?<![0-9A-Za-z_-])[0-9]{3}(?:-[0-9]{2}-| [0-9]{2} )[0-9]{4}(?![0-9A-Za-z_-])/g;

const PHONE_INTL = /(?<![0-9A-Za-z_+])\+[1-9][0-9 ().-]{6,22}[0-9](?![0-9A-Za-z_])/g;
const PHONE_NANP =
  /(?<![0-9A-Za-z_+.-])(?:\+?1[ .-]?)?(?:\([2-9][0-9]{2}\)[ .-]?|[2-9][0-9]{2}[ .-])[2-9][0-9]{2}[ .-][0-9]{4}(?![0-9A-Za-z_]|[.-][0-9])/g;
const PHONE_TRUNK = /(?<![0-9A-Za-z_+.-])0[0-9]{1,4}(?:[ .-][0-9]{2,8}){1,4}(?![0-9A-Za-z_]|[.-][0-9])/g;

// The lookbehind follows the first digit (it then looks at the character before that digit):
// irregexp skips non-digits quickly instead of testing the lookbehind at every position.
const IPV4 = /[0-9](?<![0-9A-Za-z_.][0-9])[0-9]{0,2}\.(?:[0-9]{1,3}\.){2}[0-9]{1,3}(?![0-9A-Za-z_]|\.[0-9])/g;

const H = '[0-9A-Fa-f]{1,4}';
const IPV6 = new RegExp(
  `(?<![0-9A-Za-z_:.])(?:(?:${H}:){7}${H}|(?:${H}(?::${H}){0,6})?::(?:${H}(?::${H}){0,6})?)(?:\\.[0-9]{1,3}){0,3}(?![0-9A-Za-z_:])`,
  'g',
);

const JWT =
  /(?<![A-Za-z0-9_.-])eyJ[A-Za-z0-9_-]{7,8192}\.eyJ[A-Za-z0-9_-]{7,16384}\.[A-Za-z0-9_-]{0,8192}(?![A-Za-z0-9_-])/g;

const AUTH_VALUE =
  /(?<![A-Za-z0-9_-])(?:[Bb]earer|[Bb]asic|[Tt]oken|BEARER|BASIC)[ \t]{1,8}[A-Za-z0-9._~+/-]{8,4096}={0,2}(?![A-Za-z0-9._~+/=-])/g;

const API_KEY_PREFIX =
  /^(?:(?:sk|rk)_(?:live|test)_|whsec_|AKIA|ASIA|ABIA|ACCA|gh[pousr]_|github_pat_|xox[bpaors]-|AIza|glpat-|npm_|SG\.|sk-proj-|sk-ant-api03-|sk-)/;
const API_KEY = new RegExp(
  '(?<![A-Za-z0-9_-])(?:' +
    [
      '(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,247}', // Stripe secret / restricted
      'whsec_[A-Za-z0-9+/=]{24,64}', // Stripe webhook signing secret
      '(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}', // AWS access key id
      'gh[pousr]_[A-Za-z0-9]{36,251}', // GitHub tokens
      'github_pat_[A-Za-z0-9_]{22,247}', // GitHub fine-grained PAT
      'xox[bpaors]-[A-Za-z0-9-]{10,250}', // Slack tokens
      'AIza[A-Za-z0-9_-]{35}', // Google API key
      'glpat-[A-Za-z0-9_-]{20,50}', // GitLab PAT
      'npm_[A-Za-z0-9]{36}', // npm token
      'SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}', // SendGrid
      'sk-(?:proj-|ant-api03-)?[A-Za-z0-9_-]{32,200}', // OpenAI / Anthropic
    ].join('|') +
    ')(?![A-Za-z0-9_-])',
  'g',
);

const IBAN = /(?<![0-9A-Za-z_])[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![0-9A-Za-z_])/g;

/** `::`, or a hex digit, a colon and a hex digit (the eight-group form) somewhere. */
function ipv6Gate(t: string): boolean {
  if (t.includes('::')) return true;
  for (let i = t.indexOf(':'); i > 0 && i < t.length - 1; i = t.indexOf(':', i + 1))
    if (isHex(t.charCodeAt(i - 1)) && isHex(t.charCodeAt(i + 1))) return true;
  return false;
}
const isHex = (c: number) => (c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);

/**
 * Every API_KEY prefix holds `_` or `-`, or is `SG.` or one of the uppercase AWS / Google prefixes:
 * most texts (JSON without underscores or dashes) skip the pattern after two `includes`.
 */
const API_KEY_GATE = /SG\.|A(?:KIA|SIA|BIA|CCA|Iza)/;
const apiKeyGate = (t: string): boolean => t.includes('_') || t.includes('-') || API_KEY_GATE.test(t);

/** One regex pass: five `includes` of multi-character strings cost more. */
const AUTH_GATE = /earer|asic|oken|EARER|ASIC/;
const authGate = (t: string): boolean => AUTH_GATE.test(t);

// ---------------------------------------------------------------------------------------------
// Key names

/** Lower-cased, letters and digits only: `X-Api-Key`, `api_key`, `apiKey` all become `apikey`. */
export const normalizeKey = (name: string): string => name.toLowerCase().replace(/[^a-z0-9]+/g, '');

/** A normalised key ending with one of these names a secret (`client_secret`, `X-Auth-Token`). */
const SECRET_KEY_SUFFIXES = [
  'password',
  'passwd',
  'passphrase',
  'secret',
  'secretkey',
  'token',
  'apikey',
  'apisecret',
  'privatekey',
  'accesskey',
  'credential',
  'credentials',
  'cookie',
  'sessionid',
];
/** Short names that are secrets only on their own (a suffix `pin` would match `shipping`). */
const SECRET_KEY_EXACT = new Set(['pwd', 'pass', 'pin', 'cvv', 'cvc', 'cvv2', 'otp']);
const SECRET_KEY_RE = new RegExp(`(?:${SECRET_KEY_SUFFIXES.join('|')})$`);

export function isSecretKey(name: string): boolean {
  if (name.length > 128) return false;
  const k = normalizeKey(name);
  return SECRET_KEY_EXACT.has(k) || SECRET_KEY_RE.test(k);
}

const AUTH_HEADERS = new Set(['authorization', 'proxyauthorization']);
export const isAuthorizationKey = (name: string): boolean =>
  name.length <= 32 && AUTH_HEADERS.has(normalizeKey(name));

/** `Bearer abc…` keeps `Bearer ` and masks the credentials. */
function keepScheme(s: string): string {
  const m = /^(\S+\s+)/.exec(s);
  return m ? m[1]! + maskText(s.slice(m[1]!.length)) : maskText(s);
}

// ---------------------------------------------------------------------------------------------

export const DETECTORS: Readonly<Record<PredefinedType, Detector>> = {
  email: {
    type: 'email',
    description: 'Email address',
    validation:
      'local part of 1–64 characters [A-Za-z0-9._%+-] (no leading, trailing or doubled dot), `@`, a domain of dot-separated labels and a 2–24 letter top-level domain',
    partial: 'the domain: `********@example.com`',
    patterns: [{ re: EMAIL, validate: emailValid, minLength: 6, bit: PF.at, gate: (t) => t.includes('@') }],
    keepPartial: (s) => {
      const at = s.lastIndexOf('@');
      return maskText(s.slice(0, at)) + s.slice(at);
    },
    examples: {
      matches: ['jane.doe@example.com', 'ops+alerts@mail.example.co.uk'],
      nonMatches: ['user@localhost', '@handle', 'a..b@example.com', 'name@example'],
    },
  },
  card: {
    type: 'card',
    description: 'Payment card number (PAN)',
    validation:
      '13–19 digits, optionally separated by single spaces or dashes, standing alone (not inside a longer number or word); the digits must start like a card network (Visa, Mastercard, Amex, Discover, Diners, JCB, UnionPay, Maestro) and pass the Luhn checksum',
    partial: 'the last 4 digits: `**** **** **** 1111`',
    patterns: [{ re: CARD, validate: cardValid, minLength: 13, bit: PF.card }],
    keepPartial: (s) => maskAllButLast(s, 4, DIGIT),
    examples: {
      matches: ['4111 1111 1111 1111', '5500-0000-0000-0004', '378282246310005', '4111111111111111'],
      nonMatches: [
        '4111111111111112 (fails Luhn)',
        '1732518826000 (a millisecond timestamp)',
        '550e8400-e29b-41d4-a716-446655440000 (a UUID)',
        'ORD-20261125-000123',
      ],
    },
  },
  ssn: {
    type: 'ssn',
    description: 'US Social Security number',
    validation:
      '`ddd-dd-dddd` or `ddd dd dddd` (same separator twice); area not 000, 666 or 9xx, group not 00, serial not 0000',
    partial: 'the last 4 digits: `***-**-6789`',
    patterns: [{ re: SSN, validate: ssnValid, minLength: 11, bit: PF.ssn }],
    keepPartial: (s) => maskAllButLast(s, 4, DIGIT),
    examples: {
      matches: ['123-45-6789', '078 05 1120'],
      nonMatches: ['000-12-3456', '666-12-3456', '123-00-4567', '123456789', '2026-11-25'],
    },
  },
  phone: {
    type: 'phone',
    description: 'Telephone number',
    validation:
      'E.164 / international `+` then 8–15 digits with optional spaces, dots, dashes, parentheses; North American `(415) 555-2671`, `415-555-2671`, `1 415 555 2671` (area code and exchange start with 2–9, separators required); national numbers with a trunk 0 and separators, 9–11 digits (`020 7946 0958`, `06 12 34 56 78`)',
    partial: 'the last 2 digits: `+** * ** ** ** 78`',
    patterns: [
      { re: PHONE_INTL, validate: phoneIntlValid, minLength: 9, bit: PF.plus, gate: (t) => t.includes('+') },
      { re: PHONE_NANP, validate: phoneNanpValid, minLength: 12, bit: PF.nanp },
      {
        re: PHONE_TRUNK,
        validate: phoneTrunkValid,
        minLength: 10,
        bit: PF.trunk,
        gate: (t) => t.includes('0'),
      },
    ],
    keepPartial: (s) => maskAllButLast(s, 2, DIGIT),
    examples: {
      matches: ['+14155552671', '+44 20 7946 0958', '(415) 555-2671', '415.555.2671', '06 12 34 56 78'],
      nonMatches: ['4155552671 (no separators)', '2026-11-25', '12:30:45', '+123', '123456789'],
    },
  },
  ipv4: {
    type: 'ipv4',
    description: 'IPv4 address',
    validation:
      'four dot-separated decimal octets 0–255 without leading zeros, not part of a longer dotted number or word (`v1.2.3.4`, `1.2.3.4.5`)',
    partial: 'the first three octets: `203.0.113.***`',
    patterns: [{ re: IPV4, validate: ipv4Valid, minLength: 7, bit: PF.ipv4, gate: (t) => t.includes('.') }],
    keepPartial: (s) => {
      const i = s.lastIndexOf('.');
      return s.slice(0, i + 1) + maskText(s.slice(i + 1));
    },
    examples: {
      matches: ['203.0.113.42', '10.0.0.1', '192.168.1.254'],
      nonMatches: ['256.1.1.1', '1.2.3', '01.02.03.04', '1.2.3.4.5', 'Chrome/126.0.6478.127'],
    },
  },
  ipv6: {
    type: 'ipv6',
    description: 'IPv6 address',
    validation:
      'eight colon-separated groups, or a compressed form with `::` (optionally ending in an IPv4 address), valid by node:net; times (`12:30:45`), MAC addresses and `std::vector` are not addresses',
    partial: 'the text before the third colon (the /48 prefix): `2001:db8:85a3:****:****:****:****:****`',
    patterns: [{ re: IPV6, validate: ipv6Valid, minLength: 3, bit: PF.ipv6, gate: ipv6Gate }],
    keepPartial: (s) => {
      let i = -1;
      for (let n = 0; n < 3; n++) {
        i = s.indexOf(':', i + 1);
        if (i < 0) return maskText(s);
      }
      return s.slice(0, i) + maskText(s.slice(i));
    },
    examples: {
      matches: [
        '2001:db8:85a3:0:0:8a2e:370:7334',
        '2001:db8::1',
        'fe80::1ff:fe23:4567:890a',
        '::ffff:192.0.2.1',
      ],
      nonMatches: ['12:30:45', '00:1A:2B:3C:4D:5E', 'std::vector', '::'],
    },
  },
  jwt: {
    type: 'jwt',
    description: 'JSON Web Token (JWS compact form)',
    validation:
      'three base64url segments separated by dots, the first two starting with `eyJ` (base64 of `{"`), each of the first two at least 10 characters',
    partial: 'the header segment: `eyJhbGciOiJIUzI1NiJ9.*****.*****`',
    patterns: [{ re: JWT, validate: jwtValid, minLength: 30, bit: PF.jwt, gate: (t) => t.includes('eyJ') }],
    keepPartial: (s) => {
      const i = s.indexOf('.');
      return s.slice(0, i) + maskText(s.slice(i));
    },
    examples: {
      matches: [
        'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
      ],
      nonMatches: ['eyJhbGciOiJIUzI1NiJ9', 'abc.def.ghi', 'eyJ.eyJ.x'],
    },
  },
  authorization: {
    type: 'authorization',
    description: 'HTTP Authorization credentials (Bearer, Basic, Token)',
    validation:
      'the whole value of an `Authorization` or `Proxy-Authorization` header, and anywhere else `Bearer`, `Basic` or `Token` followed by credentials of at least 8 base64/token characters',
    partial: 'the scheme: `Bearer ****************`',
    patterns: [
      {
        re: AUTH_VALUE,
        validate: (s) => /[0-9._~+/=-]/.test(s.slice(s.search(/\s/))),
        minLength: 14,
        gate: authGate,
        bit: PF.auth,
      },
    ],
    key: isAuthorizationKey,
    keepPartial: keepScheme,
    examples: {
      matches: [
        'Bearer eyJhbGciOiJIUzI1NiJ9.abc.def',
        'Basic dXNlcjpwYXNzd29yZA==',
        'token 3f9a8b7c6d5e4f30',
      ],
      nonMatches: ['Bearer token', 'Basic authentication is weak', 'bearer'],
    },
  },
  api_key: {
    type: 'api_key',
    description: 'Well-known API key and token formats',
    validation:
      'Stripe `sk_live_…`/`sk_test_…`/`rk_…`/`whsec_…`, AWS `AKIA…`/`ASIA…` (16 more upper-case letters or digits), GitHub `ghp_…`/`gho_…`/`ghu_…`/`ghs_…`/`ghr_…`/`github_pat_…`, Slack `xoxb-…`/`xoxp-…`/`xoxa-…`/`xoxo-…`/`xoxr-…`/`xoxs-…`, Google `AIza…`, GitLab `glpat-…`, npm `npm_…`, SendGrid `SG.….…`, OpenAI/Anthropic `sk-…`; each with its documented length, standing alone',
    partial: 'the prefix: `sk_live_************************`',
    patterns: [{ re: API_KEY, minLength: 20, gate: apiKeyGate, bit: PF.apiKey }],
    keepPartial: (s) => keepPrefix(s, API_KEY_PREFIX.exec(s)?.[0].length ?? 0),
    examples: {
      matches: [
        'sk_live_4eC39HqLyjWDarjtT1zdp7dc',
        'AKIAIOSFODNN7EXAMPLE',
        'ghp_abcdefghijklmnopqrstuvwxyz0123456789',
        'xoxb-123456789012-abcdefABCDEF',
        'AIzaSyA-abcdefghijklmnopqrstuvwxyz01234',
      ],
      nonMatches: ['sk_live_short', 'AKIA123', 'ghp_tooShort', 'mysk_live_4eC39HqLyjWDarjtT1zdp7dc'],
    },
  },
  iban: {
    type: 'iban',
    description: 'International Bank Account Number',
    validation:
      'country code, 2 check digits and the account part, compact or in groups of 4 separated by single spaces; the length must be the country’s and the ISO 13616 mod-97 checksum must hold',
    partial: 'the country code and the last 4 characters: `DE** **** **** **** **30 00`',
    patterns: [{ re: IBAN, validate: ibanValid, minLength: 15, bit: PF.iban }],
    keepPartial: (s) => s.slice(0, 2) + maskAllButLast(s.slice(2), 4),
    examples: {
      matches: ['DE89370400440532013000', 'GB29 NWBK 6016 1331 9268 19', 'FR1420041010050500013M02606'],
      nonMatches: ['DE89370400440532013001 (bad checksum)', 'XX89370400440532013000', 'DE8937040044'],
    },
  },
  password: {
    type: 'password',
    description: 'Password-like keys: the value of a field whose name says it is a secret',
    validation:
      'a field name (JSON property, XML element or attribute, header, query or form parameter, `name=value` or `name: value` in text) that, lower-cased without separators, ends with password, passwd, passphrase, secret, secretkey, token, apikey, apisecret, privatekey, accesskey, credential(s), cookie or sessionid, or is exactly pwd, pass, pin, cvv, cvc, cvv2 or otp',
    partial: 'nothing (the same as `full`): no part of a secret is safe to keep',
    patterns: [],
    key: isSecretKey,
    keepPartial: () => '',
    examples: {
      matches: ['password', 'user_password', 'client_secret', 'X-Api-Key', 'access_token', 'Cookie', 'pin'],
      nonMatches: ['token_type', 'tokens_used', 'shipping', 'passenger', 'secretary_name'],
    },
  },
};
