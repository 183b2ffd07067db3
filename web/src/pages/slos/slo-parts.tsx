import { useQuery } from '@tanstack/react-query';
import { slos, type Slo, type SloStatus } from '../../api/slos';
import { useAccountSid } from '../../lib/session';

// What the SLO list and the SLO page both show: status badges, percentages, burn rates, the SLI in words.

const STATUS_LABEL: Record<SloStatus['status'], string> = {
  ok: 'OK',
  warning: 'Warning',
  breaching: 'Breaching',
};
const STATUS_CLASS: Record<SloStatus['status'], string> = {
  ok: 'badge-ok',
  warning: 'badge-pending',
  breaching: 'badge-off',
};

const pctFmt = new Intl.NumberFormat(undefined, { maximumFractionDigits: 3 });
/** Percentages near 100 need their decimals: 99.95% is not 100%. */
export const pct = (v: number | null | undefined) =>
  v === null || v === undefined || !Number.isFinite(v) ? '–' : `${pctFmt.format(v)}%`;
export const rateFmt = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
export const rate = (v: number | null | undefined) =>
  v === null || v === undefined ? '–' : `${rateFmt.format(v)}×`;

export const sloHref = (sid: string) => `/slos/${encodeURIComponent(sid)}`;

export function StatusBadge({ status }: { status: SloStatus['status'] }) {
  return <span className={`badge ${STATUS_CLASS[status]}`}>{STATUS_LABEL[status]}</span>;
}

/** What an SLO counts, in words: "Latency ≤ 300 ms · POST /checkout · prod01". */
export function sliText(s: Slo): string {
  const kind =
    s.sli.kind === 'latency' ? `Latency ≤ ${s.sli.thresholdMs ?? '?'} ms` : 'Availability (non-5xx)';
  const where = [s.method && s.endpoint ? `${s.method} ${s.endpoint}` : (s.endpoint ?? s.method)]
    .concat(s.environmentSid ? [s.environmentSid] : [])
    .filter(Boolean);
  return [kind, ...where].join(' · ');
}

/** One SLO's status now, read again every minute. */
export function useSloStatus(sid: string) {
  const accountSid = useAccountSid();
  return useQuery({
    queryKey: ['sloStatus', accountSid, sid],
    queryFn: () => slos.status(accountSid, sid),
    refetchInterval: 60_000,
  });
}
