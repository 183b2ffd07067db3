/**
 * Error budgets, burn rates and multi-window multi-burn-rate alerts (docs/slos.md), pure so they
 * are unit-tested. Counts in, figures out; the queries live in slo.query.ts.
 */

/** Good and total events of one window. `total` 0 means no traffic: no figure can be computed. */
export interface WindowCounts {
  total: number;
  bad: number;
}

/** The burn-rate windows the status answers, by name, in seconds. */
export const BURN_WINDOWS = { '5m': 300, '30m': 1800, '1h': 3600, '6h': 21_600, '3d': 259_200 } as const;
export type BurnWindow = keyof typeof BURN_WINDOWS;

/**
 * One alert of a `slo_burn` trigger: it holds when the burn rate over the long window AND over the
 * short window are both at or above `burnRate` (the short window makes it stop soon after the
 * burning stops).
 */
export interface BurnAlert {
  severity: 'page' | 'ticket';
  burnRate: number;
  longWindow: string;
  shortWindow: string;
}

/** The SRE workbook's table for a 30-day objective: 2% of the budget in 1 h, 5% in 6 h, 10% in 3 d. */
export const DEFAULT_BURN_ALERTS: readonly BurnAlert[] = [
  { severity: 'page', burnRate: 14.4, longWindow: '1h', shortWindow: '5m' },
  { severity: 'page', burnRate: 6, longWindow: '6h', shortWindow: '30m' },
  { severity: 'ticket', burnRate: 1, longWindow: '3d', shortWindow: '6h' },
];

const UNIT_SECONDS: Record<string, number> = { m: 60, h: 3600, d: 86_400 };

/** `5m`, `1h`, `3d` -> seconds; undefined when malformed. Windows are whole minutes. */
export function windowSeconds(w: string): number | undefined {
  const m = /^([1-9][0-9]{0,5})([mhd])$/.exec(w);
  return m ? Number(m[1]) * UNIT_SECONDS[m[2]!]! : undefined;
}

/** The allowed fraction of bad events: 1 - objective/100 (objective 99.9 -> 0.001). */
export function allowedBadFraction(objective: number): number {
  return 1 - objective / 100;
}

/**
 * How fast the budget burns over a window: the bad fraction divided by the allowed one. 1 spends
 * exactly the budget over the SLO window; 14.4 spends a 30-day budget's 2% in one hour. Null
 * without traffic.
 */
export function burnRate(c: WindowCounts, objective: number): number | null {
  if (c.total <= 0) return null;
  return c.bad / c.total / allowedBadFraction(objective);
}

export interface ErrorBudget {
  /** bad events the objective allows for the traffic of the window so far */
  total: number;
  /** bad events so far */
  consumed: number;
  /** total - consumed; negative once the objective is missed */
  remaining: number;
  /** remaining / total in percent (100 with no traffic); below 0 once the objective is missed */
  remainingPercent: number;
}

export function errorBudget(c: WindowCounts, objective: number): ErrorBudget {
  const total = c.total * allowedBadFraction(objective);
  const remaining = total - c.bad;
  return {
    total: round(total),
    consumed: c.bad,
    remaining: round(remaining),
    remainingPercent: total > 0 ? round((100 * remaining) / total) : 100,
  };
}

/** The SLI in percent good (null without traffic). */
export function sliPercent(c: WindowCounts): number | null {
  return c.total > 0 ? (100 * (c.total - c.bad)) / c.total : null;
}

/** Every alert that holds, given the burn rate of each window it names (missing = no traffic). */
export function holdingAlerts(
  alerts: readonly BurnAlert[],
  rateOf: (window: string) => number | null,
): BurnAlert[] {
  return alerts.filter((a) => {
    const long = rateOf(a.longWindow);
    const short = rateOf(a.shortWindow);
    return long !== null && short !== null && long >= a.burnRate && short >= a.burnRate;
  });
}

export type SloState = 'ok' | 'warning' | 'breaching';

/**
 * `breaching` when the budget of the window is spent (the SLI is below the objective);
 * `warning` when one of the default burn-rate alerts holds; `ok` otherwise (also without traffic).
 */
export function sloState(budget: ErrorBudget, holding: readonly BurnAlert[]): SloState {
  if (budget.remaining < 0) return 'breaching';
  return holding.length > 0 ? 'warning' : 'ok';
}

/** `burn rate 15.2 over 1h and 20.1 over 5m (page at 14.4)` for the first holding alert. */
export function describeBurn(a: BurnAlert, rateOf: (window: string) => number | null): string {
  return `burn rate ${round(rateOf(a.longWindow) ?? 0)} over ${a.longWindow} and ${round(rateOf(a.shortWindow) ?? 0)} over ${a.shortWindow} (${a.severity} at ${a.burnRate})`;
}

export function round(v: number): number {
  return Math.round(v * 1000) / 1000;
}
