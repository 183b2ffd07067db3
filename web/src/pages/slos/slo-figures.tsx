import { useQuery } from '@tanstack/react-query';
import { useMemo } from 'react';
import type { Slo, SloStatus } from '../../api/slos';
import { ErrorBox } from '../../components/state';
import { TimeChart } from '../../components/time-chart';
import { count } from '../../lib/format';
import { useAccountSid } from '../../lib/session';
import type { TimeRange } from '../../lib/time';
import { StatusBadge, pct, rate, rateFmt } from './slo-parts';
import { eventsQuery } from '../../api/queries';

const BURN_WINDOWS = ['5m', '30m', '1h', '6h', '3d'] as const;
const DAY = 86_400_000;

/** The SLO page's charts and figures: SLI per day against the objective, budget burn-down, burn rates. */
export function SloFigures({ slo, status }: { slo: Slo; status: SloStatus }) {
  const accountSid = useAccountSid();
  const range = useMemo<TimeRange>(
    () => ({
      id: 'custom',
      start: new Date(status.window.from),
      // The axis ends with today's day, so its point sits inside the plot.
      end: new Date(Date.parse(status.window.from) + status.windowDays * DAY),
      live: false,
    }),
    [status.window.from, status.windowDays],
  );
  const markerQuery = {
    bucketSid: slo.bucketSid,
    environmentSid: slo.environmentSid ?? undefined,
    startTime: status.window.from,
    endTime: status.window.to,
    limit: 100,
  };
  const markers = useQuery({
    ...eventsQuery(accountSid, markerQuery),
  });
  const series = useMemo(() => {
    let total = 0;
    let good = 0;
    const x: number[] = [];
    const daily: (number | null)[] = [];
    const sofar: (number | null)[] = [];
    const budget: (number | null)[] = [];
    for (const d of status.daily) {
      total += d.total;
      good += d.good;
      x.push(Date.parse(`${d.day}T00:00:00Z`));
      daily.push(d.sli);
      sofar.push(total ? (good / total) * 100 : null);
      budget.push(d.budgetRemainingPercent);
    }
    return { x, daily, sofar, budget, objective: x.map(() => slo.objective) };
  }, [status.daily, slo.objective]);
  const eb = status.errorBudget;
  const marks = markers.data?.records ?? [];
  return (
    <>
      <div className="tiles" data-testid="slo-tiles">
        <div className="tile">
          <div className="tile-label">Status</div>
          <div className="tile-value">
            <StatusBadge status={status.status} />
          </div>
        </div>
        <div className="tile">
          <div className="tile-label">SLI over {status.windowDays} days</div>
          <div className="tile-value">{pct(status.sli)}</div>
          <div className="tile-change">objective {pct(status.objective)}</div>
        </div>
        <div className="tile" data-testid="slo-budget">
          <div className="tile-label">Error budget left</div>
          <div className="tile-value">{pct(eb.remainingPercent)}</div>
          <div className="tile-change">
            {count(eb.consumed)} of {rateFmt.format(eb.total)} allowed bad calls spent
          </div>
        </div>
        <div className="tile">
          <div className="tile-label">Calls in the window</div>
          <div className="tile-value">{count(status.events.total)}</div>
          <div className="tile-change">{count(status.events.bad)} bad</div>
        </div>
      </div>
      <section className="panel">
        <h2>Burn rates now</h2>
        <div className="table-wrap">
          <table className="table" data-testid="burn-rates">
            <caption className="sr-only">
              Burn rate per window: 1 spends the budget exactly over the SLO window
            </caption>
            <thead>
              <tr>
                {BURN_WINDOWS.map((w) => (
                  <th key={w} scope="col" className="num">
                    {w}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              <tr>
                {BURN_WINDOWS.map((w) => (
                  <td key={w} className="num">
                    {rate(status.burnRates[w])}
                  </td>
                ))}
              </tr>
            </tbody>
          </table>
        </div>
        <p className="hint">
          1× spends the budget exactly over {status.windowDays} days; a page fires at 14.4× over 1 hour and 5
          minutes, or 6× over 6 hours and 30 minutes.
        </p>
      </section>
      <div className="grid-2">
        <section className="panel">
          <div className="panel-head">
            <h2>SLI per day</h2>
            <span className="muted small">against the objective (UTC days)</span>
          </div>
          <TimeChart
            title="SLI per day against the objective"
            x={series.x}
            series={[
              { label: 'day', color: '#2563eb', values: series.daily },
              { label: 'window so far', color: '#7c3aed', values: series.sofar },
              { label: 'objective', color: '#d64545', values: series.objective },
            ]}
            format={pct}
            markers={marks}
            range={range}
            interval="day"
            yScale="data"
          />
        </section>
        <section className="panel">
          <div className="panel-head">
            <h2>Error budget burn-down</h2>
            <span className="muted small">% of the budget left at the end of each day</span>
          </div>
          <TimeChart
            title="Error budget left per day"
            x={series.x}
            series={[{ label: 'budget left', color: '#1e7f47', values: series.budget }]}
            format={pct}
            markers={marks}
            range={range}
            interval="day"
          />
        </section>
      </div>
      {markers.error ? <ErrorBox error={markers.error} onRetry={() => void markers.refetch()} /> : null}
    </>
  );
}
