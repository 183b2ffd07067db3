/**
 * The before/after rule of release impact (docs/releases.md "The rule"), pure so it is unit-tested
 * and its false-alarm rate measured on synthetic traffic:
 * - fewer than MIN_CALLS calls in either window: `insufficient`;
 * - latency: a two-sided Mann-Whitney U test on the two duration histograms (ties by grid index,
 *   with the tie correction) at p < ALPHA, AND p50 or p95 moved by at least MIN_LATENCY_CHANGE
 *   (after/before ratio) in the direction of the test;
 * - errors: a two-sided two-proportion z-test at p < ALPHA, AND the error rate moved by at least
 *   MIN_ERROR_POINTS percentage points;
 * - `regressed` if latency or errors got worse, else `improved` if either got better, else
 *   `unchanged`.
 */

export const MIN_CALLS = 30;
export const ALPHA = 0.001;
/** p50 or p95 at least 20% slower (or 1/1.2 faster) */
export const MIN_LATENCY_CHANGE = 1.2;
/** error rate at least 1 percentage point higher (or lower) */
export const MIN_ERROR_POINTS = 1;

/** Durations per grid index (sorted or not) with the window's call and error counts. */
export interface WindowSample {
  count: number;
  errors: number;
  /** grid index -> calls; indexes read back as milliseconds with `toMs` */
  hist: Map<number, number>;
}

export type Verdict = 'regressed' | 'improved' | 'unchanged' | 'insufficient';

export interface Figures {
  count: number;
  errorRate: number | null;
  p50: number | null;
  p95: number | null;
  p99: number | null;
}

export interface Comparison {
  verdict: Verdict;
  before: Figures;
  after: Figures;
  change: {
    p50: number | null;
    p95: number | null;
    p99: number | null;
    errorRate: number | null;
    latencyPValue: number | null;
    errorsPValue: number | null;
    reasons: string[];
  };
}

/** The standard normal upper tail, P(Z > z), from erfc (Numerical Recipes' erfcc, |error| < 1.2e-7). */
export function normalTail(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.5 * x);
  const erfc =
    t *
    Math.exp(
      -x * x -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t *
                  (0.09678418 +
                    t *
                      (-0.18628806 +
                        t *
                          (0.27886807 +
                            t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  const upper = erfc / 2;
  return z >= 0 ? upper : 1 - upper;
}

/**
 * Mann-Whitney U of `after` against `before` on histograms: z > 0 when `after` tends to be larger.
 * Returns the z score (continuity-corrected) and the two-sided p-value; null when either is empty
 * or every value ties.
 */
export function mannWhitney(
  before: Map<number, number>,
  after: Map<number, number>,
): { z: number; p: number } | null {
  const keys = [...new Set([...before.keys(), ...after.keys()])].sort((a, b) => a - b);
  let n1 = 0;
  let n2 = 0;
  for (const v of before.values()) n1 += v;
  for (const v of after.values()) n2 += v;
  const n = n1 + n2;
  if (n1 <= 0 || n2 <= 0) return null;
  let below = 0;
  let rankSum2 = 0;
  let ties = 0;
  for (const k of keys) {
    const a = before.get(k) ?? 0;
    const b = after.get(k) ?? 0;
    const t = a + b;
    if (t <= 0) continue;
    rankSum2 += b * (below + (t + 1) / 2);
    ties += t * t * t - t;
    below += t;
  }
  const u2 = rankSum2 - (n2 * (n2 + 1)) / 2;
  const mean = (n1 * n2) / 2;
  const variance = ((n1 * n2) / 12) * (n + 1 - ties / (n * (n - 1)));
  if (!(variance > 0)) return null;
  const d = u2 - mean;
  const z = (Math.sign(d) * Math.max(0, Math.abs(d) - 0.5)) / Math.sqrt(variance);
  return { z, p: Math.min(1, 2 * normalTail(Math.abs(z))) };
}

/** Two-proportion z-test (pooled): z > 0 when the after-rate is higher; null when undefined. */
export function twoProportion(
  e1: number,
  n1: number,
  e2: number,
  n2: number,
): { z: number; p: number } | null {
  if (n1 <= 0 || n2 <= 0) return null;
  const pooled = (e1 + e2) / (n1 + n2);
  const se = Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2));
  if (!(se > 0)) return null;
  const z = (e2 / n2 - e1 / n1) / se;
  return { z, p: Math.min(1, 2 * normalTail(Math.abs(z))) };
}

/** Percentiles at quantileExact's rank floor(level * n) of the histogram, read back by `toMs`. */
export function histPercentiles(
  hist: Map<number, number>,
  levels: readonly number[],
  toMs: (index: number) => number,
): (number | null)[] {
  const keys = [...hist.keys()].sort((a, b) => a - b);
  let n = 0;
  for (const k of keys) n += hist.get(k)!;
  if (n <= 0) return levels.map(() => null);
  return levels.map((l) => {
    const rank = Math.floor(l * n) + 1;
    let cum = 0;
    for (const k of keys) {
      cum += hist.get(k)!;
      if (cum >= rank) return toMs(k);
    }
    return toMs(keys[keys.length - 1]!);
  });
}

const r3 = (v: number | null): number | null => (v === null ? null : Math.round(v * 1000) / 1000);
const ratio = (a: number | null, b: number | null): number | null =>
  a !== null && b !== null && a > 0 ? b / a : null;

function figures(s: WindowSample, toMs: (index: number) => number): Figures {
  const [p50, p95, p99] = histPercentiles(s.hist, [0.5, 0.95, 0.99], toMs);
  return {
    count: s.count,
    errorRate: s.count > 0 ? r3((100 * s.errors) / s.count) : null,
    p50: r3(p50 ?? null),
    p95: r3(p95 ?? null),
    p99: r3(p99 ?? null),
  };
}

/** The verdict of one endpoint, with the figures of both windows and why. */
export function compareWindows(
  before: WindowSample,
  after: WindowSample,
  toMs: (index: number) => number,
): Comparison {
  const b = figures(before, toMs);
  const a = figures(after, toMs);
  const change: Comparison['change'] = {
    p50: r3(ratio(b.p50, a.p50)),
    p95: r3(ratio(b.p95, a.p95)),
    p99: r3(ratio(b.p99, a.p99)),
    errorRate: b.errorRate !== null && a.errorRate !== null ? r3(a.errorRate - b.errorRate) : null,
    latencyPValue: null,
    errorsPValue: null,
    reasons: [],
  };
  if (before.count < MIN_CALLS || after.count < MIN_CALLS) {
    change.reasons.push(`fewer than ${MIN_CALLS} calls in a window`);
    return { verdict: 'insufficient', before: b, after: a, change };
  }
  let worse = false;
  let better = false;
  const mw = mannWhitney(before.hist, after.hist);
  if (mw) {
    change.latencyPValue = mw.p;
    const p50 = ratio(b.p50, a.p50) ?? 1;
    const p95 = ratio(b.p95, a.p95) ?? 1;
    if (mw.p < ALPHA && mw.z > 0 && Math.max(p50, p95) >= MIN_LATENCY_CHANGE) {
      worse = true;
      change.reasons.push(`slower: p50 x${r3(p50)}, p95 x${r3(p95)}`);
    } else if (mw.p < ALPHA && mw.z < 0 && Math.min(p50, p95) <= 1 / MIN_LATENCY_CHANGE) {
      better = true;
      change.reasons.push(`faster: p50 x${r3(p50)}, p95 x${r3(p95)}`);
    }
  }
  const tp = twoProportion(before.errors, before.count, after.errors, after.count);
  if (tp) {
    change.errorsPValue = tp.p;
    const points = change.errorRate ?? 0;
    if (tp.p < ALPHA && tp.z > 0 && points >= MIN_ERROR_POINTS) {
      worse = true;
      change.reasons.push(`more errors: ${b.errorRate}% -> ${a.errorRate}%`);
    } else if (tp.p < ALPHA && tp.z < 0 && -points >= MIN_ERROR_POINTS) {
      better = true;
      change.reasons.push(`fewer errors: ${b.errorRate}% -> ${a.errorRate}%`);
    }
  }
  const verdict: Verdict = worse ? 'regressed' : better ? 'improved' : 'unchanged';
  return { verdict, before: b, after: a, change };
}

const ORDER: Record<Verdict, number> = { regressed: 0, improved: 1, unchanged: 2, insufficient: 3 };

/** Severity order: regressed first (largest p95 ratio, then error-rate rise), then improved, unchanged, insufficient. */
export function bySeverity(x: Comparison, y: Comparison): number {
  if (ORDER[x.verdict] !== ORDER[y.verdict]) return ORDER[x.verdict] - ORDER[y.verdict];
  const sx = Math.max(x.change.p95 ?? 1, 1 + (x.change.errorRate ?? 0) / 10);
  const sy = Math.max(y.change.p95 ?? 1, 1 + (y.change.errorRate ?? 0) / 10);
  return x.verdict === 'improved' ? sx - sy : sy - sx;
}
