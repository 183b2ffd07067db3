import { describe, expect, it } from 'vitest';
import {
  compareWindows,
  histPercentiles,
  mannWhitney,
  normalTail,
  twoProportion,
  type WindowSample,
} from '../../services/releases/impact-rule.js';

/** Seeded generator (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const toMs = (i: number) => 2 ** (i / 50);

/** `n` log-normal durations around `median` on the stored grid, `errorRate` of them errors. */
function sample(r: () => number, n: number, median: number, errorRate: number, sigma = 0.5): WindowSample {
  const hist = new Map<number, number>();
  let errors = 0;
  for (let i = 0; i < n; i++) {
    const z = Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
    const k = Math.round(Math.log2(median * Math.exp(sigma * z)) * 50);
    hist.set(k, (hist.get(k) ?? 0) + 1);
    if (r() < errorRate) errors++;
  }
  return { count: n, errors, hist };
}

describe('release impact rule', () => {
  it('computes the normal tail, Mann-Whitney and the two-proportion test', () => {
    expect(normalTail(0)).toBeCloseTo(0.5, 6);
    expect(normalTail(1.959964)).toBeCloseTo(0.025, 5);
    expect(normalTail(-3.090232)).toBeCloseTo(0.999, 5);
    // Every value of `after` above every value of `before`: U is maximal.
    const mw = mannWhitney(
      new Map([
        [1, 10],
        [2, 10],
      ]),
      new Map([
        [3, 10],
        [4, 10],
      ]),
    )!;
    expect(mw.z).toBeGreaterThan(5);
    expect(mw.p).toBeLessThan(1e-6);
    expect(mannWhitney(new Map([[1, 5]]), new Map([[1, 5]]))).toBeNull();
    const tp = twoProportion(5, 1000, 50, 1000)!;
    expect(tp.z).toBeGreaterThan(5);
    expect(twoProportion(0, 100, 0, 100)).toBeNull();
    expect(
      histPercentiles(
        new Map([
          [0, 50],
          [50, 50],
        ]),
        [0.5, 0.99],
        toMs,
      ),
    ).toEqual([2, 2]);
  });

  it('detects a 3x slowdown, a speed-up, an error jump, and too few calls', () => {
    const r = rng(1);
    expect(compareWindows(sample(r, 90, 40, 0), sample(r, 90, 120, 0), toMs).verdict).toBe('regressed');
    expect(compareWindows(sample(r, 90, 200, 0), sample(r, 90, 60, 0), toMs).verdict).toBe('improved');
    expect(compareWindows(sample(r, 1000, 40, 0.005), sample(r, 1000, 40, 0.05), toMs).verdict).toBe(
      'regressed',
    );
    expect(compareWindows(sample(r, 29, 40, 0), sample(r, 500, 400, 0), toMs).verdict).toBe('insufficient');
  });

  // The false-alarm rate documented in docs/releases.md: both windows drawn from the same traffic.
  // Measured: 13 of 10,000 (0.13%) with this seed; the two tests at ALPHA 0.001 bound it by 0.2%.
  it('raises at most 0.2% false alarms in 10,000 comparisons of unchanged traffic', () => {
    const r = rng(2026);
    let alarms = 0;
    let comparisons = 0;
    for (const [n, median, errorRate] of [
      [30, 50, 0.01],
      [60, 80, 0.02],
      [200, 30, 0.005],
      [1000, 150, 0.05],
    ] as const) {
      for (let i = 0; i < 2500; i++) {
        const c = compareWindows(sample(r, n, median, errorRate), sample(r, n, median, errorRate), toMs);
        comparisons++;
        if (c.verdict === 'regressed' || c.verdict === 'improved') alarms++;
      }
    }
    expect(comparisons).toBe(10_000);
    expect(alarms).toBeLessThanOrEqual(20);
  }, 60_000);
});
