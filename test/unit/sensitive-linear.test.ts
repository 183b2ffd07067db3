import v8 from 'node:v8';
import vm from 'node:vm';
import { describe, expect, it } from 'vitest';
import {
  compileSensitiveRules,
  PREDEFINED_TYPES,
  redactSensitive,
  type CompiledSensitiveRules,
} from '../../services/processor/sensitive/index.js';

/**
 * No pattern can stall the processor: the time to scan a body grows linearly with its size. Each
 * case times a body and one five times larger (1 MB and 5 MB for custom patterns, 256 KB and
 * 1.25 MB for the predefined detectors; best of five, CPU time) and asserts the ratio stays far
 * below the 25 a quadratic scan would show; a generous bound (12) because the machine is shared.
 */

const MB = 1024 * 1024;
const RATIO_BOUND = 12;

// A full collection before each timed call: the worker's heap after the other test files (its
// old generation, a half-full young one) would otherwise decide how much collecting a call pays
// for, which is not what this file measures. `gc` is exposed here for that, not by a flag.
v8.setFlagsFromString('--expose-gc');
const collect = vm.runInNewContext('gc') as () => void;

function cpuMs(f: () => void): number {
  let best = Infinity;
  for (let i = 0; i < 5; i++) {
    collect();
    const c0 = process.cpuUsage();
    f();
    const u = process.cpuUsage(c0);
    best = Math.min(best, (u.user + u.system) / 1000);
  }
  return best;
}

/** A text of `bytes` characters repeating `unit`. */
const fill = (unit: string, bytes: number) => unit.repeat(Math.ceil(bytes / unit.length)).slice(0, bytes);

function ratio(
  compiled: CompiledSensitiveRules,
  unit: string,
  contentType: string,
  wrap: (s: string) => string = (s) => s,
  size = MB,
): { small: number; large: number; ratio: number } {
  const run = (bytes: number) => {
    const body = wrap(fill(unit, bytes));
    return cpuMs(() => {
      redactSensitive({ request: { body, contentType } }, compiled);
    });
  };
  const small = Math.max(run(size), 1);
  const large = run(5 * size);
  return { small, large, ratio: large / small };
}

describe('a hostile custom pattern costs linear time', () => {
  const hostile = compileSensitiveRules([
    { sid: 'h', type: 'hostile', pattern: '(a+)+$', applyTo: 'value', level: 'full' },
  ]);

  it('(a+)+$ over a body of near-matches (runs of a ending in b), as text', () => {
    const r = ratio(hostile, `${'a'.repeat(99)}b`, 'text/plain');
    expect(r.ratio, JSON.stringify(r)).toBeLessThan(RATIO_BOUND);
  }, 120_000);

  it('(a+)+$ over a JSON string of near-matches ending in a match', () => {
    const r = ratio(hostile, `${'a'.repeat(99)}b`, 'application/json', (s) =>
      JSON.stringify({ s: `${s}aaa` }),
    );
    expect(r.ratio, JSON.stringify(r)).toBeLessThan(RATIO_BOUND);
    // and the match at the end is redacted
    const res = redactSensitive(
      { request: { body: JSON.stringify({ s: 'xaab' + 'aaa' }), contentType: 'application/json' } },
      hostile,
    );
    expect(res.record.request.body).toBe('{"s":"xaab[REDACTED:hostile]"}');
  }, 120_000);

  it('a hostile key pattern over many keys', () => {
    const keys = compileSensitiveRules([
      { sid: 'k', type: 'hostile-key', pattern: '(x+x+)+y', applyTo: 'key', level: 'full' },
    ]);
    // Distinct names so the per-name cache does not help.
    const body = (bytes: number) => {
      let s = '';
      for (let i = 0; s.length < bytes; i++) s += `${i}${'x'.repeat(40)}=v&`;
      return s;
    };
    const time = (bytes: number) => {
      const b = body(bytes);
      return cpuMs(() => {
        redactSensitive({ request: { body: b, contentType: 'application/x-www-form-urlencoded' } }, keys);
      });
    };
    const small = Math.max(time(MB), 1);
    const large = time(5 * MB);
    expect(large / small, JSON.stringify({ small, large })).toBeLessThan(RATIO_BOUND);
  }, 120_000);
});

describe('predefined detectors cost linear time on inputs built against them', () => {
  const everything = compileSensitiveRules(
    PREDEFINED_TYPES.map((type, i) => ({ sid: `p${i}`, type, level: 'full' as const })),
  );
  const units: [string, string][] = [
    ['letters (email local parts, words)', 'abcdefghij'],
    ['one digit run', '1'],
    ['digits and spaces (card, phone)', '1 '],
    ['digits and dashes (card, ssn)', '12-'],
    ['dotted digits (ipv4)', '1.2.3.'],
    ['hex and colons (ipv6)', 'a1:'],
    ['JWT-like segments', 'eyJabcdefghij.'],
    ['scheme words (authorization)', 'Bearer '],
    ['key prefixes (api keys)', 'sk_live_'],
    ['IBAN-like groups', 'DE89 3704 '],
    ['name=value pairs (password keys in text)', 'password=/'],
    ['at signs and dots (email domains)', 'a@b.'],
    ['plus signs (international phone)', '+1 2'],
  ];
  for (const [name, unit] of units) {
    it(
      name,
      () => {
        // 256 KB against 1.25 MB: the same factor 5, within the time of a unit test.
        const r = ratio(everything, unit, 'text/plain', (s) => s, MB / 4);
        expect(r.ratio, JSON.stringify(r)).toBeLessThan(RATIO_BOUND);
      },
      120_000,
    );
  }
});
