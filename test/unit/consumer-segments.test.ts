import { describe, expect, it } from 'vitest';
import { consumerSegments } from '../../services/api/consumers/consumer-stats.sql.js';
import type { MetricsScope } from '../../services/api/metrics/metrics-range.js';
import type { Sealed } from '../../services/shared/consumer-seal.js';

/**
 * The blocks of consumers_rollup a range is read from (consumer-stats.sql.ts): every minute of the
 * range exactly once, day and week blocks only up to the days' seal, hour blocks only up to the
 * hours' seal (or the days' seal without one), single minutes after it.
 */
const HOUR = 3_600;
const DAY = 86_400;
// Friday 2026-11-20 00:00 UTC; a range from 00:13 to three days and 5 h 20 min later.
const T0 = Date.UTC(2026, 10, 20) / 1000;
const scope: MetricsScope = { accountSid: 'acc', from: T0 + 13 * 60, to: T0 + 3 * DAY + 5 * HOUR + 20 * 60 };

/** Each block as [start, end) in unix seconds, with its level. */
function blocks(sealed: Sealed): { level: number; start: number; end: number }[] {
  return consumerSegments(scope, sealed).flatMap((seg) => {
    const out: { level: number; start: number; end: number }[] = [];
    for (let t = seg.from; t <= seg.to; t += seg.level * 60)
      out.push({ level: seg.level, start: t, end: t + seg.level * 60 });
    return out;
  });
}

function expectEveryMinuteOnce(bs: { start: number; end: number }[]): void {
  const minutes = bs.flatMap((b) =>
    Array.from({ length: (b.end - b.start) / 60 }, (_, i) => b.start + i * 60),
  );
  const expected = Array.from({ length: (scope.to - scope.from) / 60 + 1 }, (_, i) => scope.from + i * 60);
  expect(minutes.sort((a, b) => a - b)).toEqual(expected);
}

describe('consumerSegments', () => {
  const cases: [string, Sealed][] = [
    ['nothing sealed', { days: null, hours: null }],
    ['days sealed, hours not yet (just after the upgrade)', { days: T0 + 2 * DAY, hours: null }],
    ['days and hours sealed', { days: T0 + 2 * DAY, hours: T0 + 3 * DAY + 4 * HOUR }],
    ['hours sealed, days not yet', { days: null, hours: T0 + 3 * DAY + 4 * HOUR }],
    ['both past the range', { days: T0 + 9 * DAY, hours: T0 + 9 * DAY }],
  ];
  for (const [name, sealed] of cases) {
    it(`covers every minute once and reads no block past its seal: ${name}`, () => {
      const bs = blocks(sealed);
      expectEveryMinuteOnce(bs);
      const days = sealed.days ?? -Infinity;
      const hours = Math.max(days, sealed.hours ?? -Infinity);
      for (const b of bs) {
        if (b.level >= 1440) expect(b.end).toBeLessThanOrEqual(days);
        if (b.level === 60) expect(b.end).toBeLessThanOrEqual(hours);
      }
    });
  }

  it('reads the whole range from single minutes when nothing is sealed', () => {
    expect(new Set(blocks({ days: null, hours: null }).map((b) => b.level))).toEqual(new Set([1]));
  });

  it('reads hours between the seals and single minutes after the hours’ seal', () => {
    const bs = blocks({ days: T0 + 2 * DAY, hours: T0 + 3 * DAY + 4 * HOUR });
    expect(bs.filter((b) => b.level === 1440).map((b) => b.start)).toEqual([T0 + DAY]);
    // The first day's hours after 00:13 (01:00 on), then the hours of the day after the days' seal
    // and of the last day up to the hours' seal.
    expect(bs.filter((b) => b.level === 60)).toHaveLength(23 + 24 + 4);
    expect(bs.filter((b) => b.level === 1 && b.start >= T0 + 3 * DAY + 4 * HOUR)).toHaveLength(81);
  });
});
