import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from 'wouter';
import { releases } from '../../api/slos';
import { useImpact } from '../../components/release-verdict';
import { Empty, ErrorBox, Loading } from '../../components/state';
import { useAccountSid } from '../../lib/session';
import { formatDateTime, relative } from '../../lib/time';
import { useSharedHref } from '../../lib/url-state';
import { useScopeText } from './release-parts';
import { ImpactView } from './release-impact';

/**
 * One deployment: its verdict per endpoint (sorted by severity, with before/after p50, p95, p99
 * and error rate) and before/after charts of the endpoints that regressed or improved, around
 * the marker.
 */
export function ReleasePage() {
  const accountSid = useAccountSid();
  const href = useSharedHref();
  const { eventSid = '' } = useParams<{ eventSid: string }>();
  const event = useQuery({
    queryKey: ['event', accountSid, eventSid],
    queryFn: () => releases.event(accountSid, eventSid),
  });
  const impact = useImpact(eventSid, { enabled: event.data?.type === 'deployment' });
  const scopeText = useScopeText();
  const back = (
    <Link href={href('/releases')} className="muted small">
      ← Releases
    </Link>
  );
  if (event.isPending)
    return (
      <div className="page">
        {back}
        <Loading />
      </div>
    );
  if (event.error || !event.data)
    return (
      <div className="page">
        {back}
        <h1>Release</h1>
        <ErrorBox error={event.error} onRetry={() => void event.refetch()} />
      </div>
    );
  const e = event.data;
  return (
    <div className="page">
      <div className="page-head">
        <div>
          {back}
          <h1>{e.name}</h1>
          <p className="muted small">
            Deployed {formatDateTime(e.startedAt)} ({relative(e.startedAt)}) · {scopeText(e)}
            {e.source ? ` · from ${e.source}` : ''}
          </p>
          {e.description ? <p>{e.description}</p> : null}
        </div>
      </div>
      {e.type !== 'deployment' ? (
        <Empty title="Not a deployment">
          This marker is of type {e.type}: only deployment markers get a verdict.
        </Empty>
      ) : impact.isPending ? (
        <Loading label="Comparing the windows before and after the deployment…" />
      ) : impact.error && !impact.data ? (
        <ErrorBox error={impact.error} onRetry={() => void impact.refetch()} />
      ) : (
        <ImpactView event={e} impact={impact.data!} />
      )}
    </div>
  );
}
