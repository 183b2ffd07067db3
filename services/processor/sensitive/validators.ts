import { isIPv6 } from 'node:net';

/**
 * Checks run on a candidate after its pattern matched (pure functions, no I/O). A pattern finds
 * the shape; these reject shapes that are not the real thing (a 16-digit order id failing Luhn, an
 * IBAN with a wrong checksum, `999.1.1.1`), which keeps false positives low.
 */

export const digitsOf = (s: string): string => s.replace(/\D+/g, '');

/** Luhn (mod 10) checksum over the digits of `digits`. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return false;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/**
 * Issuer prefixes and lengths of the major card networks (ISO/IEC 7812 IIN ranges): Visa, Mastercard,
 * American Express, Discover, Diners Club, JCB, UnionPay, Maestro. A digit run that passes Luhn
 * but starts like none of them (a millisecond timestamp starts with 1) is not a card.
 */
export function cardNetwork(digits: string): string | null {
  const n = digits.length;
  const p2 = Number(digits.slice(0, 2));
  const p3 = Number(digits.slice(0, 3));
  const p4 = Number(digits.slice(0, 4));
  const p6 = Number(digits.slice(0, 6));
  if (digits[0] === '4' && (n === 13 || n === 16 || n === 19)) return 'visa';
  if (((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) && n === 16) return 'mastercard';
  if ((p2 === 34 || p2 === 37) && n === 15) return 'amex';
  if ((p4 === 6011 || (p3 >= 644 && p3 <= 649) || p2 === 65 || (p6 >= 622126 && p6 <= 622925)) && n >= 16)
    return 'discover';
  if (((p3 >= 300 && p3 <= 305) || p2 === 36 || p2 === 38 || p2 === 39) && n >= 14) return 'diners';
  if (p4 >= 3528 && p4 <= 3589 && n >= 16) return 'jcb';
  if (p2 === 62 && n >= 16) return 'unionpay';
  if ((p2 === 50 || (p2 >= 56 && p2 <= 69)) && n >= 12) return 'maestro';
  return null;
}

export function cardValid(match: string): boolean {
  const d = digitsOf(match);
  return d.length >= 13 && d.length <= 19 && cardNetwork(d) !== null && luhnValid(d);
}

/** IBAN length per country (SWIFT IBAN registry). */
const IBAN_LENGTHS: Record<string, number> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BR: 29, BY: 28, CH: 21,
  CR: 22, CY: 28, CZ: 24, DE: 22, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FO: 18, FR: 27,
  GB: 22, GE: 22, GI: 23, GL: 18, GR: 27, GT: 28, HR: 21, HU: 28, IE: 22, IL: 23, IQ: 23, IS: 26,
  IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LC: 32, LI: 21, LT: 20, LU: 20, LV: 21, LY: 25, MC: 27,
  MD: 24, ME: 22, MK: 19, MR: 27, MT: 31, MU: 30, NL: 18, NO: 15, PK: 24, PL: 28, PS: 29, PT: 25,
  QA: 29, RO: 24, RS: 22, SA: 24, SC: 31, SD: 18, SE: 24, SI: 19, SK: 24, SM: 27, ST: 25, SV: 28,
  TL: 23, TN: 24, TR: 26, UA: 29, VA: 22, VG: 24, XK: 20,
}; // prettier-ignore

/** ISO 13616: known country, its length, and the mod-97 checksum equal to 1. */
export function ibanValid(match: string): boolean {
  const s = match.replace(/ /g, '').toUpperCase();
  if (IBAN_LENGTHS[s.slice(0, 2)] !== s.length) return false;
  const rearranged = s.slice(4) + s.slice(0, 4);
  let rem = 0;
  for (let i = 0; i < rearranged.length; i++) {
    const c = rearranged.charCodeAt(i);
    if (c >= 48 && c <= 57) rem = (rem * 10 + (c - 48)) % 97;
    else if (c >= 65 && c <= 90) rem = (rem * 100 + (c - 55)) % 97;
    else return false;
  }
  return rem === 1;
}

/** US SSN rules: area not 000, 666 or 9xx; group not 00; serial not 0000. */
export function ssnValid(match: string): boolean {
  const d = digitsOf(match);
  if (d.length !== 9) return false;
  const area = d.slice(0, 3);
  return (
    area !== '000' && area !== '666' && area[0] !== '9' && d.slice(3, 5) !== '00' && d.slice(5) !== '0000'
  );
}

/** Dotted quad, each octet 0–255 without a leading zero (`01.2.3.4` is a version, not an address). */
export function ipv4Valid(match: string): boolean {
  const parts = match.split('.');
  if (parts.length !== 4) return false;
  for (const p of parts) {
    if (p.length === 0 || p.length > 3 || (p.length > 1 && p[0] === '0')) return false;
    if (Number(p) > 255) return false;
  }
  return true;
}

/**
 * A valid IPv6 text (node:net's parser) that is an address rather than a word or a time: it has
 * `::` or all eight groups, and at least one hex digit (a bare `::` is not redacted).
 */
export function ipv6Valid(match: string): boolean {
  if (!/[0-9A-Fa-f]/.test(match)) return false;
  if (!match.includes('::') && match.split(':').length < 8 && !/\d+\.\d+\.\d+\.\d+$/.test(match))
    return false;
  return isIPv6(match);
}

/** E.164 allows 15 digits at most; 8 is the shortest common international number. */
export function phoneIntlValid(match: string): boolean {
  const n = digitsOf(match).length;
  return n >= 8 && n <= 15 && balancedParens(match);
}

/** North American Numbering Plan: area code and exchange start with 2–9. */
export function phoneNanpValid(match: string): boolean {
  const d = digitsOf(match);
  const national = d.length === 11 && d[0] === '1' ? d.slice(1) : d;
  return national.length === 10 && national[0]! >= '2' && national[3]! >= '2' && balancedParens(match);
}

/** National numbers with a trunk `0` (`020 7946 0958`, `06 12 34 56 78`, `030 1234567`): 9–11 digits. */
export function phoneTrunkValid(match: string): boolean {
  const n = digitsOf(match).length;
  return n >= 9 && n <= 11 && balancedParens(match);
}

function balancedParens(s: string): boolean {
  const open = s.indexOf('(');
  const close = s.indexOf(')');
  if (open < 0 && close < 0) return true;
  return open >= 0 && close > open && s.indexOf('(', open + 1) < 0 && s.indexOf(')', close + 1) < 0;
}

/** Local part of an address: no leading, trailing or doubled dot. */
export function emailValid(match: string): boolean {
  const at = match.lastIndexOf('@');
  const local = match.slice(0, at);
  return local.length > 0 && local[0] !== '.' && !local.endsWith('.') && !local.includes('..');
}

/** A JWT's first two segments are base64url JSON objects (`eyJ` = `{"`). */
export function jwtValid(match: string): boolean {
  const parts = match.split('.');
  return parts.length === 3 && parts[0]!.length >= 10 && parts[1]!.length >= 10;
}
