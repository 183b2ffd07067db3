import type { ClickHouseClient } from '../shared/clickhouse.js';
import {
  BURN_WINDOWS,
  DEFAULT_BURN_ALERTS,
  allowedBadFraction,
  burnRate,
  errorBudget,
  holdingAlerts,
  round,
  sliPercent,
  sloState,
  windowSeconds,
  type BurnWindow,
  type ErrorBudget,
  type SloState,
} from './slo-math.js';
import { sloCounts } from './slo.query.js';
import type { Slo } from './slos.repository.js';

export interface SloStatus {
  sid: string;
  name: string;
  sli: number | null;
  objective: number;
  windowDays: number;
  window: { from: string; to: string };
  events: { total: number; good: number; bad: number };
  errorBudget: ErrorBudget;
  burnRates: Record<BurnWindow, number | null>;
  status: SloState;
  daily: {
    day: string;
    total: number;
    good: number;
    bad: number;
    sli: number | null;
    budgetRemainingPercent: number;
  }[];
}

const BURN_KEYS = Object.keys(BURN_WINDOWS) as BurnWindow[];

/**
 * The status of one SLO at `now` (docs/slos.md): SLI, error budget, burn rates over 5m … 3d, the
 * state (by the default burn-rate table) and the daily series of the window, from one query.
 */
export async function sloStatus(ch: ClickHouseClient, slo: Slo, now = new Date()): Promise<SloStatus> {
  const windows = BURN_KEYS.map((k) => BURN_WINDOWS[k]);
  const counts = await sloCounts(ch, { ...slo, accountSid: slo.accountSid }, slo.windowDays, windows, now);
  const burnRates = Object.fromEntries(
    BURN_KEYS.map((k) => [k, nullableRound(burnRate(counts.burn.get(BURN_WINDOWS[k])!, slo.objective))]),
  ) as Record<BurnWindow, number | null>;
  const rateOf = (w: string): number | null => {
    const s = windowSeconds(w);
    const c = s === undefined ? undefined : counts.burn.get(s);
    return c ? burnRate(c, slo.objective) : null;
  };
  const budget = errorBudget(counts.window, slo.objective);
  let total = 0;
  let bad = 0;
  const daily = counts.days.map((d) => {
    total += d.total;
    bad += d.bad;
    const allowed = total * allowedBadFraction(slo.objective);
    return {
      day: d.day,
      total: d.total,
      good: d.total - d.bad,
      bad: d.bad,
      sli: nullableRound(sliPercent(d)),
      budgetRemainingPercent: allowed > 0 ? round((100 * (allowed - bad)) / allowed) : 100,
    };
  });
  return {
    sid: slo.sid,
    name: slo.name,
    sli: nullableRound(sliPercent(counts.window)),
    objective: slo.objective,
    windowDays: slo.windowDays,
    window: {
      from: `${counts.days[0]!.day}T00:00:00.000Z`,
      to: now.toISOString(),
    },
    events: {
      total: counts.window.total,
      good: counts.window.total - counts.window.bad,
      bad: counts.window.bad,
    },
    errorBudget: budget,
    burnRates,
    status: sloState(budget, holdingAlerts(DEFAULT_BURN_ALERTS, rateOf)),
    daily,
  };
}

function nullableRound(v: number | null): number | null {
  return v === null ? null : round(v);
}
