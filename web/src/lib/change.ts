/**
 * How a tile states its change against the previous period of equal length. A previous period
 * with almost nothing (at most 1% of the current amount, or of the current requests for a rate)
 * makes any percentage meaningless (`+558714.3%`), so the change reads "new" instead. A change that
 * rounds to zero reads "no change" and gets no colour; otherwise the tone says whether it is good
 * (`lowerIsBetter` for times, errors and blocked requests).
 */
export interface ChangeInput {
  /** the API's change: percent for counts, milliseconds for times, points for a rate */
  amount: number | null;
  units: 'percent' | 'milliseconds' | 'points' | string;
  /** what "almost nothing" is measured on: the previous and current counts of the period */
  previousBase: number | null;
  currentBase: number | null;
  lowerIsBetter?: boolean;
}

export interface ChangeText {
  text: string;
  tone: 'good' | 'bad' | null;
}

const UNIT: Record<string, string> = { percent: '%', milliseconds: ' ms', points: ' pts' };

export function describeChange(c: ChangeInput): ChangeText {
  const prev = c.previousBase ?? 0;
  const cur = c.currentBase ?? 0;
  if (cur > 0 && prev <= cur / 100)
    return { text: 'new: little or no traffic in the previous period', tone: null };
  if (c.amount === null) return { text: 'no previous data', tone: null };
  const rounded = Math.round(c.amount * 10) / 10;
  if (rounded === 0) return { text: 'no change vs previous period', tone: null };
  const better = c.lowerIsBetter ? rounded < 0 : rounded > 0;
  const sign = rounded > 0 ? '▲ +' : '▼ ';
  return {
    text: `${sign}${rounded}${UNIT[c.units] ?? ''} vs previous period`,
    tone: better ? 'good' : 'bad',
  };
}
