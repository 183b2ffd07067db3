/**
 * The trigger part of the workflow editor: type, conditions by type (docs/workflows-api.md
 * "Trigger"), and for schedules the cron expression with its human description (cronstrue) and
 * its next five runs in the chosen time zone (cron-parser).
 */
import { CronExpressionParser } from 'cron-parser';
import cronstrue from 'cronstrue';
import { useMemo } from 'react';
import type { ThresholdMetric, ThresholdOperator, TriggerType } from '../api/workflows';

export interface TriggerDraft {
  type: TriggerType;
  /** every field as the form holds it (strings); converted by `triggerBody` */
  conditions: Record<string, string>[];
  schedule: string;
  timezone: string;
}

/**
 * The trigger types this form edits. `slo_burn` and `regression` workflows are made through the
 * API (docs/slos.md, docs/releases.md): the form has no field for an SLO.
 */
export const TRIGGER_LABELS: Record<Exclude<TriggerType, 'slo_burn' | 'regression'>, string> = {
  request: 'Request: a captured request matches',
  error: 'Error: a captured request answered 4xx/5xx matches',
  threshold: 'Threshold: a metric crosses a value over a window',
  schedule: 'Schedule: on a cron schedule',
};

const METRICS: { value: ThresholdMetric; label: string }[] = [
  { value: 'error_rate', label: 'error rate (%)' },
  { value: 'response_time', label: 'p95 response time (ms)' },
  { value: 'avg_response_time', label: 'average response time (ms)' },
];
const OPERATORS: { value: ThresholdOperator; label: string }[] = [
  { value: 'greater_than', label: '>' },
  { value: 'greater_than_or_equal', label: '≥' },
  { value: 'less_than', label: '<' },
  { value: 'less_than_or_equal', label: '≤' },
  { value: 'equals', label: '=' },
];
const METHODS = ['', 'GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT', '*'];

export function emptyCondition(type: TriggerType): Record<string, string> {
  if (type === 'threshold')
    return { metric: 'error_rate', operator: 'greater_than', value: '5', timeWindow: '5m' };
  return {};
}

/** The trigger as the API takes it: empty fields left out, numbers as numbers. */
export function triggerBody(t: TriggerDraft): {
  type: TriggerType;
  conditions: Record<string, unknown>[];
  schedule?: string;
  timezone?: string;
} {
  if (t.type === 'schedule')
    return {
      type: 'schedule',
      conditions: [],
      schedule: t.schedule.trim(),
      ...(t.timezone.trim() ? { timezone: t.timezone.trim() } : {}),
    };
  const conditions = t.conditions.map((c) => {
    const out: Record<string, unknown> = {};
    for (const [k, raw] of Object.entries(c)) {
      const v = raw.trim();
      if (v === '') continue;
      if (k === 'value') out[k] = Number.isFinite(Number(v)) ? Number(v) : v;
      else if (k === 'statusCode') out[k] = /^\d+$/.test(v) ? Number(v) : v;
      else out[k] = v;
    }
    return out;
  });
  return { type: t.type, conditions };
}

/** The stored trigger back into form strings. */
export function triggerDraft(t: {
  type: TriggerType;
  conditions: Record<string, unknown>[];
  schedule?: string;
  timezone?: string;
}): TriggerDraft {
  return {
    type: t.type,
    conditions: t.conditions.map((c) =>
      Object.fromEntries(
        Object.entries(c).map(([k, v]) => [k, v === null || v === undefined ? '' : String(v)]),
      ),
    ),
    schedule: t.schedule ?? '',
    timezone: t.timezone ?? '',
  };
}

/** One line summary for lists: "error · path /api/* · 5xx". */
export function triggerSummary(t: {
  type: string;
  conditions: Record<string, unknown>[];
  schedule?: string;
  timezone?: string;
}): string {
  if (t.type === 'schedule')
    return `schedule ${t.schedule ?? ''}${t.timezone ? ` (${t.timezone})` : ' (UTC)'}`;
  const parts = t.conditions.map((c) =>
    t.type === 'threshold'
      ? `${String(c.metric)} ${OPERATORS.find((o) => o.value === c.operator)?.label ?? String(c.operator)} ${String(c.value)} over ${String(c.timeWindow)}`
      : Object.entries(c)
          .map(([k, v]) => `${k} ${String(v)}`)
          .join(', '),
  );
  return [t.type, ...parts].join(' · ');
}

/** cronstrue's description and the next five runs, or the parse error. */
export function cronPreview(
  expr: string,
  tz: string,
  now: Date = new Date(),
): { description: string; runs: string[] } | { error: string } {
  const e = expr.trim();
  if (!e) return { error: 'Enter a cron expression, e.g. 0 9 * * 1-5' };
  const zone = tz.trim() || 'UTC';
  let fmt: Intl.DateTimeFormat;
  try {
    fmt = new Intl.DateTimeFormat('en-GB', {
      timeZone: zone,
      weekday: 'short',
      year: 'numeric',
      month: 'short',
      day: 'numeric',
      hour: '2-digit',
      minute: '2-digit',
      second: e.split(/\s+/).length === 6 ? '2-digit' : undefined,
      timeZoneName: 'short',
    });
  } catch {
    return { error: `${zone} is not a known IANA time zone` };
  }
  try {
    const it = CronExpressionParser.parse(e, { tz: zone, currentDate: now });
    const runs: string[] = [];
    for (let i = 0; i < 5; i++) runs.push(fmt.format(it.next().toDate()));
    const description = cronstrue.toString(e, { use24HourTimeFormat: true, verbose: false });
    return { description, runs };
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
}

export function TriggerEditor({
  value,
  onChange,
  errors,
}: {
  value: TriggerDraft;
  onChange: (next: TriggerDraft) => void;
  /** API field errors keyed `trigger.…` */
  errors: Record<string, string>;
}) {
  const set = (patch: Partial<TriggerDraft>) => onChange({ ...value, ...patch });
  const setCond = (i: number, patch: Record<string, string>) =>
    set({ conditions: value.conditions.map((c, j) => (j === i ? { ...c, ...patch } : c)) });
  const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const preview = useMemo(
    () => (value.type === 'schedule' ? cronPreview(value.schedule, value.timezone) : null),
    [value.type, value.schedule, value.timezone],
  );
  const err = (k: string) => errors[`trigger.${k}`];
  const condErr = Object.entries(errors)
    .filter(([k]) => k === 'trigger' || k === 'trigger.conditions' || k.startsWith('trigger.type'))
    .map(([, v]) => v);

  return (
    <fieldset className="wf-fieldset">
      <legend>Trigger</legend>
      <div className="field">
        <label htmlFor="wf-trigger-type">Fires on</label>
        <select
          id="wf-trigger-type"
          value={value.type}
          onChange={(e) => {
            const type = e.target.value as TriggerType;
            set({ type, conditions: type === 'threshold' ? [emptyCondition(type)] : [] });
          }}
        >
          {(Object.keys(TRIGGER_LABELS) as (keyof typeof TRIGGER_LABELS)[]).map((t) => (
            <option key={t} value={t}>
              {TRIGGER_LABELS[t]}
            </option>
          ))}
        </select>
      </div>

      {value.type === 'schedule' ? (
        <div className="stack">
          <div className="grid-2">
            <div className="field">
              <label htmlFor="wf-cron">Cron expression</label>
              <input
                id="wf-cron"
                className="mono"
                placeholder="0 9 * * 1-5"
                value={value.schedule}
                aria-invalid={err('schedule') ? true : undefined}
                aria-describedby="wf-cron-hint"
                onChange={(e) => set({ schedule: e.target.value })}
              />
              <div id="wf-cron-hint" className="hint">
                minute hour day month weekday (a 6th field first = seconds)
              </div>
              {err('schedule') ? (
                <div className="field-error" role="alert">
                  {err('schedule')}
                </div>
              ) : null}
            </div>
            <div className="field">
              <label htmlFor="wf-timezone">Time zone</label>
              <input
                id="wf-timezone"
                list="wf-timezones"
                placeholder="UTC"
                value={value.timezone}
                aria-invalid={err('timezone') ? true : undefined}
                onChange={(e) => set({ timezone: e.target.value })}
              />
              <datalist id="wf-timezones">
                {['UTC', browserZone, 'Europe/Berlin', 'Europe/London', 'America/New_York', 'Asia/Tokyo']
                  .filter((z, i, all) => all.indexOf(z) === i)
                  .map((z) => (
                    <option key={z} value={z} />
                  ))}
              </datalist>
              <div className="hint">IANA name; empty = UTC</div>
              {err('timezone') ? (
                <div className="field-error" role="alert">
                  {err('timezone')}
                </div>
              ) : null}
            </div>
          </div>
          <div className="wf-cron-preview" aria-live="polite" data-testid="cron-preview">
            {preview && 'error' in preview ? (
              <span className="field-error">{preview.error}</span>
            ) : preview ? (
              <>
                <strong>{preview.description}</strong>
                <span className="muted small"> — next runs ({value.timezone.trim() || 'UTC'}):</span>
                <ol className="wf-runs">
                  {preview.runs.map((r) => (
                    <li key={r}>{r}</li>
                  ))}
                </ol>
              </>
            ) : null}
          </div>
        </div>
      ) : (
        <div className="stack">
          <div className="hint">
            {value.type === 'threshold'
              ? 'Fires when every condition holds (checked every minute), at most once per window.'
              : 'Fires when every condition matches; a field left empty matches anything. No condition = every ' +
                (value.type === 'error' ? 'error.' : 'request.')}
          </div>
          {value.conditions.map((c, i) => (
            <div key={i} className="wf-condition" role="group" aria-label={`Condition ${i + 1}`}>
              {value.type === 'threshold' ? (
                <>
                  <label>
                    <span className="sr-only">Metric of condition {i + 1}</span>
                    <select value={c.metric ?? ''} onChange={(e) => setCond(i, { metric: e.target.value })}>
                      {METRICS.map((m) => (
                        <option key={m.value} value={m.value}>
                          {m.label}
                        </option>
                      ))}
                    </select>
                  </label>
                  <label>
                    <span className="sr-only">Operator of condition {i + 1}</span>
                    <select
                      value={c.operator ?? ''}
                      onChange={(e) => setCond(i, { operator: e.target.value })}
                    >
                      {OPERATORS.map((o) => (
                        <option key={o.value} value={o.value}>
                          {o.label}
                        </option>
                      ))}
                    </select>
                  </label>
                  <label>
                    <span className="sr-only">Value of condition {i + 1}</span>
                    <input
                      type="number"
                      step="any"
                      className="wf-num"
                      value={c.value ?? ''}
                      aria-invalid={err(`conditions.${i}.value`) ? true : undefined}
                      onChange={(e) => setCond(i, { value: e.target.value })}
                    />
                  </label>
                  <label className="wf-inline">
                    over
                    <input
                      className="wf-window mono"
                      aria-label={`Window of condition ${i + 1}`}
                      placeholder="5m"
                      value={c.timeWindow ?? ''}
                      aria-invalid={err(`conditions.${i}.timeWindow`) ? true : undefined}
                      onChange={(e) => setCond(i, { timeWindow: e.target.value })}
                    />
                  </label>
                </>
              ) : (
                <>
                  <input
                    className="mono"
                    aria-label={`Path of condition ${i + 1}`}
                    placeholder="path, e.g. /api/*"
                    value={c.path ?? ''}
                    aria-invalid={err(`conditions.${i}.path`) ? true : undefined}
                    onChange={(e) => setCond(i, { path: e.target.value })}
                  />
                  {value.type === 'request' ? (
                    <select
                      aria-label={`Method of condition ${i + 1}`}
                      value={c.method ?? ''}
                      onChange={(e) => setCond(i, { method: e.target.value })}
                    >
                      {METHODS.map((m) => (
                        <option key={m} value={m}>
                          {m || 'any method'}
                        </option>
                      ))}
                    </select>
                  ) : null}
                  <input
                    className="wf-status mono"
                    aria-label={`Status of condition ${i + 1}`}
                    placeholder={value.type === 'error' ? 'status, e.g. 5xx' : 'status, e.g. 200 or 4xx'}
                    value={c.statusCode ?? ''}
                    aria-invalid={err(`conditions.${i}.statusCode`) ? true : undefined}
                    onChange={(e) => setCond(i, { statusCode: e.target.value })}
                  />
                </>
              )}
              <button
                type="button"
                className="btn btn-small btn-ghost"
                aria-label={`Remove condition ${i + 1}`}
                disabled={value.type === 'threshold' && value.conditions.length === 1}
                onClick={() => set({ conditions: value.conditions.filter((_, j) => j !== i) })}
              >
                Remove
              </button>
              {Object.entries(errors)
                .filter(([k]) => k.startsWith(`trigger.conditions.${i}`))
                .map(([k, v]) => (
                  <div key={k} className="field-error wf-cond-error" role="alert">
                    {k.replace(`trigger.conditions.${i}.`, '')} {v}
                  </div>
                ))}
            </div>
          ))}
          <div>
            <button
              type="button"
              className="btn btn-small"
              disabled={value.conditions.length >= 20}
              onClick={() => set({ conditions: [...value.conditions, emptyCondition(value.type)] })}
            >
              Add condition
            </button>
          </div>
        </div>
      )}
      {condErr.map((m) => (
        <div key={m} className="field-error" role="alert">
          {m}
        </div>
      ))}
    </fieldset>
  );
}
