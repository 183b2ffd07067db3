/**
 * Threshold trigger rules (docs/workflows.md "Threshold triggers"), pure so they are unit-tested:
 * condition parsing, time windows and comparisons. Querying and cooldown live elsewhere.
 */

export const THRESHOLD_METRICS = ['error_rate', 'response_time', 'avg_response_time'] as const;
export type ThresholdMetric = (typeof THRESHOLD_METRICS)[number];

export const OPERATORS = [
  'greater_than',
  'less_than',
  'greater_than_or_equal',
  'less_than_or_equal',
  'equals',
] as const;
export type Operator = (typeof OPERATORS)[number];

export interface ThresholdCondition {
  metric: ThresholdMetric;
  operator: Operator;
  value: number;
  /** as written, e.g. `5m` */
  timeWindow: string;
  windowSeconds: number;
}

/** The metric values over one window; null when there was no traffic to compute them from. */
export interface WindowMetrics {
  requests: number;
  error_rate: number | null;
  avg_response_time: number | null;
  response_time: number | null;
}

export const DEFAULT_TIME_WINDOW = '5m';
const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
/** Longest window: the aggregates' default retention. */
export const MAX_WINDOW_SECONDS = 30 * 86_400;

/** `30s`, `5m`, `1h`, `1d` → seconds; undefined when malformed, zero or above 30 days. */
export function parseTimeWindow(raw: unknown): number | undefined {
  if (typeof raw !== 'string') return undefined;
  const m = /^\s*(\d{1,7})\s*([smhd])\s*$/i.exec(raw);
  if (!m) return undefined;
  const seconds = Number(m[1]) * UNIT_SECONDS[m[2]!.toLowerCase()]!;
  return seconds > 0 && seconds <= MAX_WINDOW_SECONDS ? seconds : undefined;
}

export function compare(actual: number, operator: Operator, expected: number): boolean {
  switch (operator) {
    case 'greater_than':
      return actual > expected;
    case 'less_than':
      return actual < expected;
    case 'greater_than_or_equal':
      return actual >= expected;
    case 'less_than_or_equal':
      return actual <= expected;
    case 'equals':
      return actual === expected;
  }
}

/**
 * The conditions of a threshold trigger (`trigger.conditions`, an array; a single object is
 * accepted too). Returns the valid ones and a reason for each one dropped.
 */
export function parseThresholdConditions(trigger: unknown): {
  conditions: ThresholdCondition[];
  errors: string[];
} {
  const t = (trigger ?? {}) as { conditions?: unknown };
  const list: unknown[] = Array.isArray(t.conditions) ? t.conditions : t.conditions ? [t.conditions] : [];
  const conditions: ThresholdCondition[] = [];
  const errors: string[] = [];
  list.forEach((raw, i) => {
    const c = (raw ?? {}) as Record<string, unknown>;
    const metric = c.metric as ThresholdMetric;
    const operator = (c.operator ?? 'greater_than') as Operator;
    const value = typeof c.value === 'string' && c.value.trim() !== '' ? Number(c.value) : c.value;
    const timeWindow = typeof c.timeWindow === 'string' ? c.timeWindow.trim() : DEFAULT_TIME_WINDOW;
    const windowSeconds = parseTimeWindow(timeWindow);
    if (!THRESHOLD_METRICS.includes(metric))
      errors.push(`conditions[${i}].metric ${JSON.stringify(c.metric)}`);
    else if (!OPERATORS.includes(operator))
      errors.push(`conditions[${i}].operator ${JSON.stringify(c.operator)}`);
    else if (typeof value !== 'number' || !Number.isFinite(value)) errors.push(`conditions[${i}].value`);
    else if (windowSeconds === undefined)
      errors.push(`conditions[${i}].timeWindow ${JSON.stringify(c.timeWindow)}`);
    else conditions.push({ metric, operator, value, timeWindow, windowSeconds });
  });
  if (list.length === 0) errors.push('no conditions');
  return { conditions, errors };
}

export interface Evaluation {
  hit: boolean;
  /** per condition: the measured value (null without traffic) and whether it holds */
  results: { condition: ThresholdCondition; actual: number | null; holds: boolean }[];
}

/** Every condition must hold (AND); a metric without data never holds. */
export function evaluate(
  conditions: readonly ThresholdCondition[],
  metricsFor: (windowSeconds: number) => WindowMetrics,
): Evaluation {
  const results = conditions.map((condition) => {
    const actual = metricsFor(condition.windowSeconds)[condition.metric];
    const holds =
      actual !== null && Number.isFinite(actual) && compare(actual, condition.operator, condition.value);
    return { condition, actual, holds };
  });
  return { hit: results.length > 0 && results.every((r) => r.holds), results };
}

/** `error_rate is 45.5 (greater_than 10) over the last 5m`, conditions joined by `and`. */
export function describeEvaluation(ev: Evaluation): string {
  return ev.results
    .map(
      (r) =>
        `${r.condition.metric} is ${r.actual === null ? 'n/a' : round(r.actual)} (${r.condition.operator} ${r.condition.value}) over the last ${r.condition.timeWindow}`,
    )
    .join(' and ');
}

export function round(v: number): number {
  return Math.round(v * 1000) / 1000;
}
