import { describe, expect, it } from 'vitest';
import {
  DEFAULT_BURN_ALERTS,
  burnRate,
  errorBudget,
  holdingAlerts,
  sloState,
  windowSeconds,
} from '../../services/slo/slo-math.js';
import { thresholdIndex } from '../../services/slo/slo.query.js';

describe('SLO arithmetic', () => {
  it('computes the burn rate as the bad fraction over the allowed one', () => {
    expect(burnRate({ total: 1000, bad: 1 }, 99.9)).toBeCloseTo(1, 9);
    expect(burnRate({ total: 1000, bad: 144 }, 99)).toBeCloseTo(14.4, 9);
    expect(burnRate({ total: 0, bad: 0 }, 99)).toBeNull();
  });

  it('counts the error budget in calls, negative once missed', () => {
    expect(errorBudget({ total: 200, bad: 6 }, 99)).toEqual({
      total: 2,
      consumed: 6,
      remaining: -4,
      remainingPercent: -200,
    });
    expect(errorBudget({ total: 0, bad: 0 }, 99).remainingPercent).toBe(100);
  });

  it('holds an alert only when both of its windows burn at or above its rate', () => {
    const rates: Record<string, number | null> = { '1h': 15, '5m': 14.4, '6h': 7, '30m': 2, '3d': 0.5 };
    const holding = holdingAlerts(DEFAULT_BURN_ALERTS, (w) => rates[w] ?? null);
    expect(holding).toEqual([DEFAULT_BURN_ALERTS[0]]);
    expect(holdingAlerts(DEFAULT_BURN_ALERTS, (w) => (w === '5m' ? null : 100))).toEqual([
      DEFAULT_BURN_ALERTS[1],
      DEFAULT_BURN_ALERTS[2],
    ]);
    expect(sloState(errorBudget({ total: 100, bad: 0 }, 99), holding)).toBe('warning');
    expect(sloState(errorBudget({ total: 100, bad: 2 }, 99), [])).toBe('breaching');
    expect(sloState(errorBudget({ total: 100, bad: 1 }, 99), [])).toBe('ok');
  });

  it('reads windows and places the latency threshold on the duration grid', () => {
    expect(windowSeconds('5m')).toBe(300);
    expect(windowSeconds('3d')).toBe(259_200);
    expect(windowSeconds('0m')).toBeUndefined();
    // 200 ms sits at index 382; 199 ms (381.95) rounds into it, 201 ms (382.55) does not.
    expect(thresholdIndex(200)).toBe(382);
    expect(Math.round(Math.log2(199) * 50)).toBe(382);
    expect(Math.round(Math.log2(201) * 50)).toBe(383);
  });
});
