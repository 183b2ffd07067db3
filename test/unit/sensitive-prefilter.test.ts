import fs from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DETECTORS, PREDEFINED_TYPES } from '../../services/processor/sensitive/detectors.js';
import { compileSensitiveRules, redactSensitive } from '../../services/processor/sensitive/index.js';
import { JSON_KEY_HINT } from '../../services/processor/sensitive/matchers.js';
import {
  compilePrefilter,
  generatedSource,
  GENERATED,
} from '../../services/processor/sensitive/prefilter.build.js';
import {
  PF,
  PF_ALL,
  prefilterBits,
  PREFILTER_MIN_LENGTH,
  scanBits,
  setPrefilterEnabled,
} from '../../services/processor/sensitive/prefilter.js';
import { ingestRecord, rng } from '../bench/records.js';

/**
 * The prefilter (services/processor/sensitive/prefilter.ts) may only ever skip a pattern that
 * cannot match: every bit must be a necessary condition of its pattern. Checked on texts built
 * from the characters and fragments the patterns care about (so that each pattern matches many of
 * them), on each detector's documented examples in many surroundings, and on whole records: the
 * engine's output is the same with the prefilter and without it.
 */

const PATTERNS = PREDEFINED_TYPES.flatMap((type) =>
  DETECTORS[type].patterns.map((p, i) => ({ name: `${type}#${i}`, re: new RegExp(p.re.source), bit: p.bit })),
);
const KEY = { name: 'json key hint', re: JSON_KEY_HINT, bit: PF.jsonKey };

const EXAMPLES = PREDEFINED_TYPES.flatMap((t) => DETECTORS[t].examples.matches);
const CHARS = [...'0123456789 -.:_+@"\'\t\n,;=/()[]{}\\xXaAbBcCeEfFkKnNrRsStTzZGIJyoivwpduhlQ'];
const ODD = ['é', '€', 'ſ', 'K', '😀', '\u00a0', '\u0130', '\ud800'];
const FRAGMENTS = [
  ...['Bearer ', 'bearer ', 'BEARER ', 'Basic ', 'basic ', 'BASIC ', 'Token ', 'token ', 'TOKEN '],
  ...['eyJ', 'eyJhbGciOiJIUzI1NiJ9.', 'AKIA', 'ASIA', 'ABIA', 'ACCA', 'AIza', 'SG.', 'sk_live_', 'ghp_'],
  ...['xoxb-', '::', 'fe80::', 'a1:', '"password"', '"Api_Key" :', '"x-auth"', '"PIN"', 'secret', 'Cookie'],
  ...['DE89', 'GB29', ' NWBK', ' 6016', '4111', '1111', '0', '00', '020', '+1', '+44', '415', '555', '2671'],
  ...['192.168.', '1.2.3.4', '10.0.', '123-45-', '6789', '(415) ', '": ', '":', '"', 'abcdefghijklmnop'],
];
const token = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...CHARS) },
  { weight: 1, arbitrary: fc.constantFrom(...ODD) },
  { weight: 4, arbitrary: fc.constantFrom(...FRAGMENTS) },
  { weight: 1, arbitrary: fc.constantFrom(...EXAMPLES) },
  { weight: 2, arbitrary: fc.stringMatching(/^[0-9]{1,8}$/) },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Z0-9]{1,6}$/) },
);
const text = fc.array(token, { maxLength: 90 }).map((xs) => xs.join(''));

describe('the prefilter never hides a match', () => {
  it('holds on generated texts, and each pattern matches many of them', () => {
    const matched = new Map<string, number>();
    fc.assert(
      fc.property(text, (t) => {
        const bits = scanBits(t);
        for (const p of [...PATTERNS, KEY]) {
          if (!p.re.test(t)) continue;
          matched.set(p.name, (matched.get(p.name) ?? 0) + 1);
          if ((bits & p.bit) === 0)
            throw new Error(`${p.name} matches ${JSON.stringify(t)} but its bit is unset`);
        }
      }),
      { numRuns: 30_000, seed: 15 },
    );
    // Without matches the property would hold vacuously: each pattern must have been exercised.
    for (const p of [...PATTERNS, KEY]) expect(matched.get(p.name) ?? 0, p.name).toBeGreaterThanOrEqual(30);
  });

  it("holds on each detector's examples, wherever they stand", () => {
    const around: [string, string][] = [
      ['', ''],
      [' ', ' '],
      ['"', '"'],
      ['x=', '&y'],
      ['é', '€'],
      ['{"a":"', '"}'],
      ['\n', '\t'],
      ['(', ')'],
      ['ſ', 'K'],
    ];
    let checked = 0;
    for (const ex of EXAMPLES)
      for (const [a, b] of around)
        for (const pad of ['', 'x'.repeat(PREFILTER_MIN_LENGTH)]) {
          const t = `${pad}${a}${ex}${b}`;
          const bits = prefilterBits(t);
          for (const p of PATTERNS)
            if (p.re.test(t)) {
              expect(bits & p.bit, `${p.name} in ${JSON.stringify(t.slice(-80))}`).not.toBe(0);
              checked++;
            }
        }
    expect(checked).toBeGreaterThan(EXAMPLES.length * 9);
  });

  it('gives a JSON body without secrets none of the bits it does not need', () => {
    // The point of the prefilter: an ordinary API payload skips every pattern.
    const body = JSON.stringify({
      id: 918273645,
      items: Array.from({ length: 12 }, (_, i) => ({
        sku: `KX47PQ2R${i}`,
        name: 'alpha bravo whiskey',
        qty: i,
        price: 12.5 + i,
      })),
      total: 12,
    });
    expect(body.length).toBeGreaterThanOrEqual(PREFILTER_MIN_LENGTH);
    expect(prefilterBits(body)).toBe(0);
    expect(prefilterBits(body.replace('alpha', 'jane@example.com'))).toBe(PF.at);
    expect(prefilterBits(body.replace('"qty"', '"api_token"')) & PF.jsonKey).toBe(PF.jsonKey);
    expect(prefilterBits('short')).toBe(PF_ALL);
  });

  it('leaves the engine’s output unchanged on records with secrets planted in long bodies', () => {
    const r = rng(7);
    const secrets = [
      'jane.doe@example.com',
      '4111 1111 1111 1111',
      '123-45-6789',
      '+44 20 7946 0958',
      '(415) 555-2671',
      '020 7946 0958',
      '203.0.113.42',
      'fe80::1ff:fe23:4567:890a',
      'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
      'Bearer abcdef0123456789',
      'AKIAIOSFODNN7EXAMPLE',
      'GB29 NWBK 6016 1331 9268 19',
    ];
    const records = Array.from({ length: 400 }, (_, i) => {
      const rec = ingestRecord(r, { environments: ['prod'], now: 1_790_000_000_000 }) as {
        request: Record<string, unknown>;
        response: Record<string, unknown>;
      };
      const s = secrets[i % secrets.length]!;
      const body = typeof rec.response.body === 'string' ? rec.response.body : '{}';
      if (i % 3 === 0) rec.response.body = body.replace(/"name":"/, `"name":"${s} `);
      else if (i % 3 === 1) rec.response.body = body.replace(/^\{/, `{"note":${JSON.stringify(s)},`);
      else if (i % 6 === 2) rec.response.body = body.replace(/"qty"/, '"client_secret"');
      return rec;
    });
    const compiled = compileSensitiveRules(
      PREDEFINED_TYPES.map((type, i) => ({
        sid: `r${i}`,
        type,
        level: 'partial' as const,
        scopes: ['*' as const],
      })),
    );
    const run = () => records.map((x) => JSON.stringify(redactSensitive(x, compiled)));
    const withPrefilter = run();
    setPrefilterEnabled(false);
    let without: string[];
    try {
      without = run();
    } finally {
      setPrefilterEnabled(true);
    }
    expect(withPrefilter).toEqual(without);
    // The planted secrets were found (the comparison is not between two unchanged sets).
    const changedBodies = withPrefilter.filter((x) => x.includes('"response.body"')).length;
    expect(changedBodies).toBeGreaterThan(250);
  });
});

describe('the committed WebAssembly module', () => {
  it('is what assembly/prefilter.ts compiles to (npm run build:prefilter)', async () => {
    const wasm = await compilePrefilter();
    expect(fs.readFileSync(GENERATED, 'utf8')).toBe(generatedSource(wasm));
  }, 60_000);
});
