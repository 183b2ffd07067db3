import { useQuery } from '@tanstack/react-query';
import { releases, type ReleaseImpact, type Verdict } from '../api/slos';
import { useAccountSid } from '../lib/session';
import { formatTime } from '../lib/time';

/** The release page of a deployment event. */
export const releaseHref = (eventSid: string) => `/releases/${encodeURIComponent(eventSid)}`;

export const VERDICT_LABEL: Record<Verdict, string> = {
  regressed: 'Regressed',
  improved: 'Improved',
  unchanged: 'Unchanged',
  insufficient: 'Too few calls',
};

const VERDICT_CLASS: Record<Verdict, string> = {
  regressed: 'badge-off',
  improved: 'badge-ok',
  unchanged: 'badge-neutral',
  insufficient: 'badge-neutral',
};

export function VerdictBadge({ verdict }: { verdict: Verdict }) {
  return <span className={`badge badge-plain ${VERDICT_CLASS[verdict]}`}>{VERDICT_LABEL[verdict]}</span>;
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

/**
 * A deployment's verdict in a few words: "2 endpoints regressed, 1 improved", "no endpoint
 * changed", "too few calls to judge", or, while the after window runs, when the verdict comes.
 */
export function verdictSummary(impact: ReleaseImpact): string {
  if (impact.status === 'pending') return `Pending: judged at ${formatTime(impact.window.after.to)}`;
  const { regressed, improved, unchanged, insufficient } = impact.summary;
  const parts: string[] = [];
  if (regressed) parts.push(`${plural(regressed, 'endpoint')} regressed`);
  if (improved) parts.push(regressed ? `${improved} improved` : `${plural(improved, 'endpoint')} improved`);
  if (parts.length) return parts.join(', ');
  if (unchanged) return 'No endpoint changed';
  if (insufficient) return 'Too few calls to judge';
  return 'No traffic in the windows';
}

/** The tone of a summary: red when something regressed, green when only improvements. */
export function summaryClass(impact: ReleaseImpact): string {
  if (impact.status === 'pending') return 'badge-pending';
  if (impact.summary.regressed) return 'badge-off';
  if (impact.summary.improved) return 'badge-ok';
  return 'badge-neutral';
}

/** The impact of one deployment, shared by the Releases page and every chart's marker card. */
export function useImpact(eventSid: string, opts: { enabled?: boolean } = {}) {
  const accountSid = useAccountSid();
  return useQuery({
    queryKey: ['impact', accountSid, eventSid],
    queryFn: () => releases.impact(accountSid, eventSid),
    enabled: opts.enabled ?? true,
    staleTime: 60_000,
    // A pending verdict is asked again until it is ready.
    refetchInterval: (q) => (q.state.data?.status === 'pending' ? 30_000 : false),
  });
}

/**
 * The verdict summary of a deployment as a badge. It is fetched when this is first drawn (a
 * marker card draws it on hover or focus only), then kept in the query cache.
 */
export function ReleaseVerdict({ eventSid }: { eventSid: string }) {
  const impactQuery = useImpact(eventSid);
  if (impactQuery.isPending)
    return (
      <span className="muted" data-testid="release-verdict">
        Judging the release…
      </span>
    );
  if (impactQuery.error && !impactQuery.data)
    return (
      <span className="field-error" data-testid="release-verdict">
        {impactQuery.error instanceof Error ? impactQuery.error.message : 'The verdict could not be read'}
      </span>
    );
  const impact = impactQuery.data!;
  return (
    <span className={`badge badge-plain ${summaryClass(impact)}`} data-testid="release-verdict">
      {verdictSummary(impact)}
    </span>
  );
}
