import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useMemo, useState, type FormEvent } from 'react';
import { Link, useLocation, useParams } from 'wouter';
import { fieldErrors } from '../../api/client';
import { buckets, events } from '../../api/resources';
import { slos, type Slo, type SloBody, type SloStatus } from '../../api/slos';
import { workflows, type Workflow } from '../../api/workflows';
import { Dialog, RemoveDialog } from '../../components/dialog';
import { Field, FormError } from '../../components/form';
import { Empty, ErrorBox, Loading, QueryView } from '../../components/state';
import { TimeChart } from '../../components/time-chart';
import { count } from '../../lib/format';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime, relative, type TimeRange } from '../../lib/time';
import { useSharedHref } from '../../lib/url-state';
import { ExecutionStatus, workflowHref } from '../workflows/workflows';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;
const WINDOWS = [7, 28, 30] as const;
const BURN_WINDOWS = ['5m', '30m', '1h', '6h', '3d'] as const;

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
const pct = (v: number | null | undefined) =>
  v === null || v === undefined || !Number.isFinite(v) ? '–' : `${pctFmt.format(v)}%`;
const rateFmt = new Intl.NumberFormat(undefined, { maximumFractionDigits: 2 });
const rate = (v: number | null | undefined) =>
  v === null || v === undefined ? '–' : `${rateFmt.format(v)}×`;

export const sloHref = (sid: string) => `/slos/${encodeURIComponent(sid)}`;

function StatusBadge({ status }: { status: SloStatus['status'] }) {
  return <span className={`badge ${STATUS_CLASS[status]}`}>{STATUS_LABEL[status]}</span>;
}

/** What an SLO counts, in words: "Latency ≤ 300 ms · POST /checkout · prod01". */
function sliText(s: Slo): string {
  const kind =
    s.sli.kind === 'latency' ? `Latency ≤ ${s.sli.thresholdMs ?? '?'} ms` : 'Availability (non-5xx)';
  const where = [s.method && s.endpoint ? `${s.method} ${s.endpoint}` : (s.endpoint ?? s.method)]
    .concat(s.environmentSid ? [s.environmentSid] : [])
    .filter(Boolean);
  return [kind, ...where].join(' · ');
}

function useSloStatus(sid: string) {
  const accountSid = useAccountSid();
  return useQuery({
    queryKey: ['sloStatus', accountSid, sid],
    queryFn: () => slos.status(accountSid, sid),
    refetchInterval: 60_000,
  });
}

/**
 * The account's SLOs, each with its status now: SLI, error budget left, the 1-hour burn rate and
 * ok / warning / breaching; create, edit and delete them in a dialog.
 */
export function SlosPage() {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const list = useQuery({ queryKey: ['slos', accountSid], queryFn: () => slos.list(accountSid) });
  const [editing, setEditing] = useState<Slo | 'new' | null>(null);
  const [deleting, setDeleting] = useState<Slo | null>(null);
  const mayWrite = can('workflows:write');
  return (
    <div className="page">
      <div className="page-head">
        <h1>SLOs</h1>
        {mayWrite ? (
          <button type="button" className="btn btn-primary" onClick={() => setEditing('new')}>
            New SLO
          </button>
        ) : null}
      </div>
      <p className="hint intro">
        A service level objective: the share of a bucket&apos;s calls that must be good over a rolling window.
        The error budget is the bad calls the objective allows; a burn rate of 1 spends it exactly over the
        window.
      </p>
      <section className="panel">
        <QueryView
          query={list}
          isEmpty={(d) => d.records.length === 0}
          empty={
            <Empty title="No SLOs yet">
              Say which share of calls must succeed (availability) or be fast enough (latency), e.g. 99.9% of
              POST /checkout over 30 days.
            </Empty>
          }
        >
          {(d) => (
            <div className="table-wrap">
              <table className="table" data-testid="slos-table">
                <caption className="sr-only">SLOs with their status now</caption>
                <thead>
                  <tr>
                    <th scope="col">SLO</th>
                    <th scope="col">Status</th>
                    <th scope="col" className="num">
                      Objective
                    </th>
                    <th scope="col" className="num">
                      SLI
                    </th>
                    <th scope="col" className="num">
                      Budget left
                    </th>
                    <th scope="col" className="num">
                      Burn rate 1h
                    </th>
                    {mayWrite || can('workflows:delete') ? (
                      <th scope="col">
                        <span className="sr-only">Actions</span>
                      </th>
                    ) : null}
                  </tr>
                </thead>
                <tbody>
                  {d.records.map((s) => (
                    <SloRow key={s.sid} slo={s} onEdit={setEditing} onDelete={setDeleting} />
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </QueryView>
      </section>
      {editing ? (
        <SloDialog existing={editing === 'new' ? undefined : editing} onClose={() => setEditing(null)} />
      ) : null}
      {deleting ? (
        <RemoveDialog
          title="Delete this SLO?"
          confirmLabel="Delete SLO"
          remove={() => slos.remove(accountSid, deleting.sid)}
          onDone={() => qc.invalidateQueries({ queryKey: ['slos', accountSid] })}
          onClose={() => setDeleting(null)}
        >
          <p>
            “{deleting.name}” and its figures disappear. Burn-rate workflows that name it stop firing. Traffic
            data is not affected.
          </p>
        </RemoveDialog>
      ) : null}
    </div>
  );
}

function SloRow({
  slo: s,
  onEdit,
  onDelete,
}: {
  slo: Slo;
  onEdit: (s: Slo) => void;
  onDelete: (s: Slo) => void;
}) {
  const { can } = useSession();
  const href = useSharedHref();
  const st = useSloStatus(s.sid);
  const cells = st.data ? (
    <>
      <td>
        <StatusBadge status={st.data.status} />
      </td>
      <td className="num nowrap">
        {pct(s.objective)} <span className="muted small">/ {s.windowDays} d</span>
      </td>
      <td className="num">{pct(st.data.sli)}</td>
      <td className="num">{pct(st.data.errorBudget.remainingPercent)}</td>
      <td className="num">{rate(st.data.burnRates['1h'])}</td>
    </>
  ) : (
    <td colSpan={5}>
      {st.isPending ? (
        <span className="muted">Computing the status…</span>
      ) : (
        <ErrorBox error={st.error} onRetry={() => void st.refetch()} />
      )}
    </td>
  );
  return (
    <tr data-testid="slo-row">
      <td>
        <Link href={href(sloHref(s.sid))}>
          <strong>{s.name}</strong>
        </Link>
        <div className="muted small">{sliText(s)}</div>
      </td>
      {cells}
      {can('workflows:write') || can('workflows:delete') ? (
        <td>
          <div className="row-actions">
            {can('workflows:write') ? (
              <button
                type="button"
                className="btn btn-small"
                onClick={() => onEdit(s)}
                aria-label={`Edit ${s.name}`}
              >
                Edit
              </button>
            ) : null}
            {can('workflows:delete') ? (
              <button
                type="button"
                className="btn btn-small btn-danger-ghost"
                onClick={() => onDelete(s)}
                aria-label={`Delete ${s.name}`}
              >
                Delete
              </button>
            ) : null}
          </div>
        </td>
      ) : null}
    </tr>
  );
}

/** The fields the dialog shows the API's validation messages beside. */
const FIELDS = [
  'name',
  'bucketSid',
  'environmentSid',
  'endpoint',
  'method',
  'sli',
  'sli.thresholdMs',
  'objective',
  'windowDays',
];

/**
 * Creates or replaces an SLO. Nothing is checked in the browser: the API's validation messages
 * are shown beside the field they name (an objective of 100 is refused with the API's words).
 */
function SloDialog({ existing, onClose }: { existing?: Slo; onClose: () => void }) {
  const accountSid = useAccountSid();
  const qc = useQueryClient();
  const bucketList = useQuery({ queryKey: ['buckets', accountSid], queryFn: () => buckets.list(accountSid) });
  const [name, setName] = useState(existing?.name ?? '');
  const [bucketSid, setBucketSid] = useState(existing?.bucketSid ?? '');
  const [environmentSid, setEnvironmentSid] = useState(existing?.environmentSid ?? '');
  const [endpoint, setEndpoint] = useState(existing?.endpoint ?? '');
  const [method, setMethod] = useState(existing?.method ?? '');
  const [kind, setKind] = useState<'availability' | 'latency'>(existing?.sli.kind ?? 'availability');
  const [threshold, setThreshold] = useState(String(existing?.sli.thresholdMs ?? 300));
  const [objective, setObjective] = useState(String(existing?.objective ?? 99.9));
  const [windowDays, setWindowDays] = useState(String(existing?.windowDays ?? 30));
  const bucket = bucketSid || bucketList.data?.records[0]?.sid || '';
  const save = useMutation({
    mutationFn: () => {
      const body = {
        name,
        bucketSid: bucket,
        environmentSid: environmentSid.trim() || null,
        endpoint: endpoint.trim() || null,
        method: method || null,
        sli: kind === 'latency' ? { kind, thresholdMs: Number(threshold) } : { kind },
        objective: Number(objective),
        windowDays: Number(windowDays),
      } as SloBody;
      return existing ? slos.update(accountSid, existing.sid, body) : slos.create(accountSid, body);
    },
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: ['slos', accountSid] });
      if (existing) {
        await qc.invalidateQueries({ queryKey: ['slo', accountSid, existing.sid] });
        await qc.invalidateQueries({ queryKey: ['sloStatus', accountSid, existing.sid] });
      }
      onClose();
    },
  });
  const errs = fieldErrors(save.error);
  const err = (f: string) => errs[f] ?? errs[f.replace('.', '/')];
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  return (
    <Dialog title={existing ? `Edit ${existing.name}` : 'New SLO'} onClose={onClose}>
      <form className="stack" onSubmit={submit} noValidate>
        <Field
          id="slo-name"
          label="Name"
          value={name}
          onChange={(e) => setName(e.target.value)}
          error={err('name')}
        />
        <div className="field">
          <label htmlFor="slo-bucket">Bucket</label>
          <select
            id="slo-bucket"
            value={bucket}
            onChange={(e) => setBucketSid(e.target.value)}
            aria-invalid={err('bucketSid') ? true : undefined}
            aria-describedby={err('bucketSid') ? 'slo-bucket-error' : undefined}
          >
            {(bucketList.data?.records ?? []).map((b) => (
              <option key={b.sid} value={b.sid}>
                {b.name}
              </option>
            ))}
          </select>
          {err('bucketSid') ? (
            <div id="slo-bucket-error" className="field-error" role="alert">
              {err('bucketSid')}
            </div>
          ) : null}
        </div>
        <Field
          id="slo-env"
          label="Environment (optional)"
          value={environmentSid}
          placeholder="every environment"
          onChange={(e) => setEnvironmentSid(e.target.value)}
          error={err('environmentSid')}
        />
        <div className="form-row">
          <div className="field">
            <label htmlFor="slo-method">Method</label>
            <select id="slo-method" value={method} onChange={(e) => setMethod(e.target.value)}>
              <option value="">Every method</option>
              {METHODS.map((m) => (
                <option key={m}>{m}</option>
              ))}
            </select>
          </div>
          <Field
            id="slo-endpoint"
            label="Endpoint (optional)"
            value={endpoint}
            placeholder="/users/{id}"
            onChange={(e) => setEndpoint(e.target.value)}
            error={err('endpoint')}
          />
        </div>
        <div className="form-row">
          <div className="field">
            <label htmlFor="slo-kind">Good calls are</label>
            <select
              id="slo-kind"
              value={kind}
              onChange={(e) => setKind(e.target.value as 'availability' | 'latency')}
            >
              <option value="availability">answers other than 5xx (availability)</option>
              <option value="latency">calls under a time (latency)</option>
            </select>
            {err('sli') ? (
              <div className="field-error" role="alert">
                {err('sli')}
              </div>
            ) : null}
          </div>
          {kind === 'latency' ? (
            <Field
              id="slo-threshold"
              label="Threshold (ms)"
              type="number"
              step="any"
              value={threshold}
              onChange={(e) => setThreshold(e.target.value)}
              error={err('sli.thresholdMs')}
            />
          ) : null}
        </div>
        <div className="form-row">
          <Field
            id="slo-objective"
            label="Objective (% good)"
            type="number"
            step="any"
            value={objective}
            onChange={(e) => setObjective(e.target.value)}
            error={err('objective')}
            hint="e.g. 99.9"
          />
          <div className="field">
            <label htmlFor="slo-window">Window</label>
            <select id="slo-window" value={windowDays} onChange={(e) => setWindowDays(e.target.value)}>
              {WINDOWS.map((w) => (
                <option key={w} value={w}>
                  {w} days
                </option>
              ))}
            </select>
          </div>
        </div>
        <FormError error={save.error} shownAt={FIELDS} />
        <div className="actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={save.isPending || !bucket}>
            {existing ? 'Save SLO' : 'Create SLO'}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/**
 * One SLO: its SLI per day and over the window so far against the objective, the error budget's
 * burn-down, the burn rates now, the burn-rate alerts it raised and the event markers of its
 * bucket over the window.
 */
export function SloPage() {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const href = useSharedHref();
  const [, navigate] = useLocation();
  const qc = useQueryClient();
  const { sloSid = '' } = useParams<{ sloSid: string }>();
  const slo = useQuery({
    queryKey: ['slo', accountSid, sloSid],
    queryFn: () => slos.get(accountSid, sloSid),
  });
  const status = useSloStatus(sloSid);
  const bucketList = useQuery({ queryKey: ['buckets', accountSid], queryFn: () => buckets.list(accountSid) });
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const back = (
    <Link href={href('/slos')} className="muted small">
      ← SLOs
    </Link>
  );
  if (slo.isPending)
    return (
      <div className="page">
        {back}
        <Loading />
      </div>
    );
  if (slo.error || !slo.data)
    return (
      <div className="page">
        {back}
        <h1>SLO</h1>
        <ErrorBox error={slo.error} onRetry={() => void slo.refetch()} />
      </div>
    );
  const s = slo.data;
  const bucketName = bucketList.data?.records.find((b) => b.sid === s.bucketSid)?.name ?? s.bucketSid;
  return (
    <div className="page">
      <div className="page-head">
        <div>
          {back}
          <h1>{s.name}</h1>
          <p className="muted small">
            {sliText(s)} · objective {pct(s.objective)} over {s.windowDays} days · bucket {bucketName}
          </p>
        </div>
        <div className="row-actions">
          {can('workflows:write') ? (
            <button type="button" className="btn" onClick={() => setEditing(true)}>
              Edit
            </button>
          ) : null}
          {can('workflows:delete') ? (
            <button type="button" className="btn btn-danger-ghost" onClick={() => setDeleting(true)}>
              Delete
            </button>
          ) : null}
        </div>
      </div>
      {status.isPending ? (
        <Loading label="Computing the SLO's figures…" />
      ) : status.error && !status.data ? (
        <ErrorBox error={status.error} onRetry={() => void status.refetch()} />
      ) : (
        <SloFigures slo={s} status={status.data!} />
      )}
      {can('workflows:read') ? <SloAlerts slo={s} /> : null}
      {editing ? <SloDialog existing={s} onClose={() => setEditing(false)} /> : null}
      {deleting ? (
        <RemoveDialog
          title="Delete this SLO?"
          confirmLabel="Delete SLO"
          remove={() => slos.remove(accountSid, s.sid)}
          onDone={async () => {
            await qc.invalidateQueries({ queryKey: ['slos', accountSid] });
            navigate(href('/slos'));
          }}
          onClose={() => setDeleting(false)}
        >
          <p>
            “{s.name}” and its figures disappear. Burn-rate workflows that name it stop firing. Traffic data
            is not affected.
          </p>
        </RemoveDialog>
      ) : null}
    </div>
  );
}

const DAY = 86_400_000;

function SloFigures({ slo, status }: { slo: Slo; status: SloStatus }) {
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
    queryKey: ['events', accountSid, markerQuery],
    queryFn: () => events.list(accountSid, markerQuery),
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

/** The slo_burn workflows that name this SLO and their latest executions. */
function SloAlerts({ slo }: { slo: Slo }) {
  const accountSid = useAccountSid();
  const href = useSharedHref();
  const wfs = useQuery({
    queryKey: ['workflows', accountSid, slo.bucketSid, 'slo'],
    queryFn: () => workflows.listAccount(accountSid, { bucketSid: slo.bucketSid }),
    select: (d) =>
      d.records.filter((w) => {
        const t = w.trigger as { type: string; sloSid?: string };
        return t.type === 'slo_burn' && t.sloSid === slo.sid;
      }),
  });
  return (
    <section className="panel" data-testid="slo-alerts">
      <h2>Burn-rate alerts</h2>
      <QueryView
        query={wfs}
        isEmpty={(d) => d.length === 0}
        empty={
          <Empty title="No burn-rate alert on this SLO">
            Create a workflow with the trigger <code>{`{"type": "slo_burn", "sloSid": "${slo.sid}"}`}</code>{' '}
            through the API to be paged when the budget burns fast.
          </Empty>
        }
      >
        {(d) => (
          <ul className="alert-list">
            {d.map((w) => (
              <SloAlert key={w.sid} workflow={w} href={href(workflowHref(w))} />
            ))}
          </ul>
        )}
      </QueryView>
    </section>
  );
}

function SloAlert({ workflow: w, href }: { workflow: Workflow; href: string }) {
  const accountSid = useAccountSid();
  const runs = useQuery({
    queryKey: ['workflowExecutions', accountSid, w.sid, 'slo'],
    queryFn: () => workflows.executions(accountSid, w.environmentSid, w.bucketSid, w.sid, { limit: 10 }),
    refetchInterval: 60_000,
  });
  return (
    <li className="alert-item" data-testid="slo-alert">
      <h3>
        <Link href={href}>{w.name}</Link>
      </h3>
      <QueryView
        query={runs}
        isEmpty={(d) => d.records.length === 0}
        empty={<p className="muted small">It has not fired.</p>}
      >
        {(d) => (
          <div className="table-wrap">
            <table className="table">
              <caption className="sr-only">Latest executions of {w.name}</caption>
              <thead>
                <tr>
                  <th scope="col">Fired</th>
                  <th scope="col">Status</th>
                  <th scope="col">Message</th>
                </tr>
              </thead>
              <tbody>
                {d.records.map((x) => (
                  <tr key={x.sid}>
                    <td className="nowrap">
                      <time dateTime={x.createdAt} title={formatDateTime(x.createdAt)}>
                        {relative(x.createdAt)}
                      </time>
                    </td>
                    <td>
                      <ExecutionStatus status={x.status} />
                    </td>
                    <td className="small">{x.trigger?.message ?? x.error ?? '–'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </QueryView>
    </li>
  );
}
