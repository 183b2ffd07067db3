/**
 * CPU cost of Shape A redaction (issue 15's limit: at most 30 µs added per record): the bench's
 * records (test/bench/records.ts: 0.5–8 KB, JSON string bodies, a dozen headers, query strings)
 * through `redactSensitive` with every predefined type enabled on all scopes (`*`), per level,
 * against no rules; in process, no I/O, CPU time of this process (median of the rounds).
 * Also: the same records with planted secrets (a card, an email, a JWT… in a body field, a header
 * and the query) so the cost of actually redacting shows; and each predefined pattern run by JS
 * RegExp and by re2js over the same bodies (the engine choice of detectors.ts).
 *
 *   npx tsx test/bench/sensitive.ts [records=5000] [rounds=5]
 *
 * NOTE: tsx adds esbuild's keepNames helper to every closure; for figures close to the built
 * service: `npx esbuild test/bench/sensitive.ts --bundle --platform=node --format=esm
 * --packages=external --outfile=/tmp/sensitive-bench.mjs && node /tmp/sensitive-bench.mjs`.
 */
import { RE2JS } from 're2js';
import { DETECTORS, PREDEFINED_TYPES } from '../../services/processor/sensitive/detectors.js';
import {
  compileSensitiveRules,
  redactSensitive,
  type CompiledSensitiveRules,
  type Level,
} from '../../services/processor/sensitive/index.js';
import { ingestRecord, rng } from './records.js';

const N = Number(process.argv[2] ?? 5000);
const ROUNDS = Number(process.argv[3] ?? 5);

type Rec = { request: Record<string, unknown>; response: Record<string, unknown>; environmentSid: string };

const r = rng(42);
const plain: Rec[] = Array.from(
  { length: N },
  () => ingestRecord(r, { environments: ['prod01', 'stag01'], now: 1_790_000_000_000 }) as Rec,
);

/** Every tenth record carries secrets: a card and an email in the body, a JWT header, an email query. */
function withSecrets(rec: Rec, i: number): Rec {
  if (i % 10 !== 0) return rec;
  const c = structuredClone(rec);
  const body = typeof c.response.body === 'string' ? c.response.body : '{}';
  c.response.body = body.replace(
    /^\{/,
    '{"payer":{"email":"jane.doe@example.com","card":"4111 1111 1111 1111","iban":"DE89370400440532013000"},',
  );
  (c.request.headers as Record<string, string>)['x-session'] =
    'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
  c.request.url = `${String(c.request.url)}${String(c.request.url).includes('?') ? '&' : '?'}email=jane%40example.com`;
  return c;
}
const planted = plain.map(withSecrets);

function rules(level: Level): CompiledSensitiveRules {
  return compileSensitiveRules(
    PREDEFINED_TYPES.map((type, i) => ({
      sid: `r${i}`,
      type,
      level,
      scopes: ['*' as const],
      redactAt: 'server' as const,
    })),
  );
}

function cpuUsPerRecord(records: Rec[], compiled: CompiledSensitiveRules): { us: number; redacted: number } {
  const per: number[] = [];
  let redacted = 0;
  for (let round = 0; round <= ROUNDS; round++) {
    redacted = 0;
    const c0 = process.cpuUsage();
    for (const rec of records) {
      if (redactSensitive(rec, compiled).redacted) redacted++;
    }
    const used = process.cpuUsage(c0);
    // Round 0 warms the JIT and is not counted.
    if (round > 0) per.push((used.user + used.system) / records.length);
  }
  per.sort((a, b) => a - b);
  return { us: per[Math.floor(per.length / 2)]!, redacted };
}

const sizes = plain.map((x) => JSON.stringify(x).length);
sizes.sort((a, b) => a - b);
console.log(
  `records=${N} rounds=${ROUNDS} node ${process.version}; record JSON size p50 ${sizes[Math.floor(N / 2)]} B, p90 ${sizes[Math.floor(N * 0.9)]} B, max ${sizes[N - 1]} B`,
);
const base = cpuUsPerRecord(plain, compileSensitiveRules([]));
console.log(`no rules: ${base.us.toFixed(2)} µs/record (the same call with an empty rule set)`);
console.log('level   | bench records µs/record (redacted) | 10% with planted secrets µs/record (redacted)');
for (const level of ['full', 'mask', 'partial'] as const) {
  const compiled = rules(level);
  const a = cpuUsPerRecord(plain, compiled);
  const b = cpuUsPerRecord(planted, compiled);
  console.log(
    `${level.padEnd(7)} | ${a.us.toFixed(2).padStart(8)} (${a.redacted})`.padEnd(46) +
      `| ${b.us.toFixed(2).padStart(8)} (${b.redacted})`,
  );
}

// JS RegExp vs re2js per predefined pattern, over every body text of the bench records.
// RE2 has no lookahead: the trailing `(?!…)` is dropped for re2js (it then finds slightly more
// candidates; the timing comparison is what matters). Lookbehinds run with RE2JS.LOOKBEHINDS.
const texts = planted.flatMap((x) =>
  [x.request.body, x.response.body].filter((b): b is string => typeof b === 'string'),
);
const bytes = texts.reduce((s, t) => s + t.length, 0);
console.log(`\npattern scan over ${texts.length} bodies (${(bytes / 1e6).toFixed(1)} MB): ns per KB`);
console.log('type          | JS RegExp | re2js');
for (const type of PREDEFINED_TYPES) {
  for (const p of DETECTORS[type].patterns) {
    const js = new RegExp(p.re.source, 'g');
    let re2: RE2JS | null = null;
    try {
      re2 = RE2JS.compile(p.re.source.replace(/\(\?!(?:[^()]|\([^()]*\))*\)$/, ''), RE2JS.LOOKBEHINDS);
    } catch {
      re2 = null;
    }
    const time = (f: (t: string) => void): number => {
      const runs: number[] = [];
      for (let round = 0; round <= 3; round++) {
        const c0 = process.cpuUsage();
        for (const t of texts) f(t);
        const u = process.cpuUsage(c0);
        if (round > 0) runs.push(((u.user + u.system) * 1000) / (bytes / 1024));
      }
      runs.sort((a, b) => a - b);
      return runs[1]!;
    };
    const jsNs = time((t) => {
      js.lastIndex = 0;
      while (js.exec(t) !== null);
    });
    const reNs = re2
      ? time((t) => {
          for (const m of re2!.matchAll(t)) void m;
        })
      : NaN;
    console.log(
      `${type.padEnd(13)} | ${jsNs.toFixed(0).padStart(9)} | ${Number.isNaN(reNs) ? 'n/a (syntax)' : reNs.toFixed(0).padStart(5)}`,
    );
  }
}
