import { describe, expect, it } from 'vitest';
import {
  compare,
  describeEvaluation,
  evaluate,
  parseThresholdConditions,
  parseTimeWindow,
  type WindowMetrics,
} from '../../services/scheduler/threshold.evaluator.js';

describe('threshold triggers', () => {
  it('parses time windows in s, m, h and d', () => {
    expect(parseTimeWindow('30s')).toBe(30);
    expect(parseTimeWindow('5m')).toBe(300);
    expect(parseTimeWindow('2h')).toBe(7200);
    expect(parseTimeWindow('1d')).toBe(86_400);
    for (const bad of ['', '5', 'm', '0m', '5x', '-5m', '31d', 5])
      expect(parseTimeWindow(bad), String(bad)).toBeUndefined();
  });

  it('compares with every operator', () => {
    expect(compare(11, 'greater_than', 10)).toBe(true);
    expect(compare(10, 'greater_than', 10)).toBe(false);
    expect(compare(10, 'greater_than_or_equal', 10)).toBe(true);
    expect(compare(9, 'less_than', 10)).toBe(true);
    expect(compare(10, 'less_than_or_equal', 10)).toBe(true);
    expect(compare(10, 'equals', 10)).toBe(true);
    expect(compare(10.5, 'equals', 10)).toBe(false);
  });

  it('keeps valid conditions and names the invalid ones', () => {
    const { conditions, errors } = parseThresholdConditions({
      type: 'threshold',
      conditions: [
        { metric: 'error_rate', operator: 'greater_than', value: 10, timeWindow: '5m' },
        { metric: 'cpu', operator: 'greater_than', value: 1, timeWindow: '5m' },
        { metric: 'avg_response_time', operator: 'between', value: 1, timeWindow: '5m' },
        { metric: 'response_time', operator: 'less_than', value: 'x', timeWindow: '5m' },
        { metric: 'response_time', operator: 'less_than', value: '250', timeWindow: '1h' },
      ],
    });
    expect(conditions.map((c) => [c.metric, c.value, c.windowSeconds])).toEqual([
      ['error_rate', 10, 300],
      ['response_time', 250, 3600],
    ]);
    expect(errors).toHaveLength(3);
    expect(parseThresholdConditions({ type: 'threshold' }).errors).toEqual(['no conditions']);
  });

  it('requires every condition and never fires without data', () => {
    const { conditions } = parseThresholdConditions({
      conditions: [
        { metric: 'error_rate', operator: 'greater_than', value: 10, timeWindow: '5m' },
        { metric: 'avg_response_time', operator: 'greater_than', value: 100, timeWindow: '5m' },
      ],
    });
    const m = (over: Partial<WindowMetrics>): WindowMetrics => ({
      requests: 10,
      error_rate: 50,
      avg_response_time: 200,
      response_time: 300,
      ...over,
    });
    expect(evaluate(conditions, () => m({})).hit).toBe(true);
    expect(evaluate(conditions, () => m({ avg_response_time: 50 })).hit).toBe(false);
    expect(
      evaluate(conditions, () => m({ requests: 0, error_rate: null, avg_response_time: null })).hit,
    ).toBe(false);
    expect(describeEvaluation(evaluate(conditions.slice(0, 1), () => m({ error_rate: 45.4545 })))).toBe(
      'error_rate is 45.455 (greater_than 10) over the last 5m',
    );
  });
});
