import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useRef, useState, type FormEvent } from 'react';
import { Link, useLocation } from 'wouter';
import { fieldErrors } from '../../api/client';
import { workflows, type Workflow, type WorkflowBody, type WorkflowTestResult } from '../../api/workflows';
import { FormError } from '../../components/form';
import { QueryView } from '../../components/state';
import {
  ActionsEditor,
  actionFieldKeys,
  actionDraft,
  actionsBody,
  emptyAction,
  type ActionDraft,
  type FocusedField,
} from './workflow-actions';
import {
  TriggerEditor,
  triggerBody,
  triggerDraft,
  type TriggerDraft,
} from '../../components/workflow-trigger';
import { VariablePicker } from './workflow-variables';
import { useAccountSid, useSession } from '../../lib/session';
import { useQueryState, useSharedHref } from '../../lib/url-state';
import { DeleteWorkflow, workflowHref } from './workflows';
import { useBuckets } from '../../api/queries';
import { DataTable } from '../../components/data-table';

interface Draft {
  name: string;
  description: string;
  bucketSid: string;
  environmentSid: string;
  isActive: boolean;
  trigger: TriggerDraft;
  actions: ActionDraft[];
}

type Params = { bucketSid?: string; environmentSid?: string; workflowSid?: string };

/** The editor of one workflow (`/settings/workflows/new` or `/settings/workflows/{b}/{e}/{w}`). */
export function WorkflowEditPage({ params }: { params: Params }) {
  const accountSid = useAccountSid();
  const { bucketSid, environmentSid, workflowSid } = params;
  const existing = useQuery({
    queryKey: ['workflow', accountSid, bucketSid, environmentSid, workflowSid],
    queryFn: () => workflows.get(accountSid, environmentSid!, bucketSid!, workflowSid!),
    enabled: Boolean(workflowSid),
  });
  if (!workflowSid) return <WorkflowEditor key="new" />;
  if (existing.data) return <WorkflowEditor key={existing.data.sid} stored={existing.data} />;
  return (
    <div className="page">
      <QueryView query={existing}>{() => null}</QueryView>
    </div>
  );
}

function initialDraft(stored: Workflow | undefined, bucket: string | null, env: string | null): Draft {
  if (stored)
    return {
      name: stored.name,
      description: stored.description,
      bucketSid: stored.bucketSid,
      environmentSid: stored.environmentSid,
      isActive: stored.isActive,
      trigger: triggerDraft(stored.trigger as WorkflowBody['trigger']),
      actions: (stored.actions as WorkflowBody['actions']).map((x, i) => actionDraft(x, i)),
    };
  return {
    name: '',
    description: '',
    bucketSid: bucket ?? '',
    environmentSid: env ?? '',
    isActive: true,
    trigger: { type: 'error', conditions: [], schedule: '', timezone: '' },
    actions: [emptyAction('webhook', 0)],
  };
}

function WorkflowEditor({ stored }: { stored?: Workflow }) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const { get } = useQueryState();
  const href = useSharedHref();
  const [, navigate] = useLocation();
  const [d, setD] = useState<Draft>(() => initialDraft(stored, get('bucket'), get('env')));
  const [clientErrors, setClientErrors] = useState<Record<string, string>>({});
  const [saved, setSaved] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const keyRef = useRef(100);
  const focused = useRef<FocusedField | null>(null);
  const [canInsert, setCanInsert] = useState(false);
  const [sampleSid, setSampleSid] = useState('');
  const set = (patch: Partial<Draft>) => {
    setSaved(false);
    setD((x) => ({ ...x, ...patch }));
  };
  const bucketList = useBuckets();
  const mayWrite = can('workflows:write');

  const build = (): WorkflowBody | null => {
    const { actions, errors } = actionsBody(d.actions);
    setClientErrors(errors);
    if (Object.keys(errors).length) return null;
    return {
      name: d.name.trim(),
      description: d.description,
      trigger: triggerBody(d.trigger),
      actions,
      isActive: d.isActive,
    };
  };

  const save = useMutation({
    mutationFn: (body: WorkflowBody) =>
      stored
        ? workflows.update(accountSid, stored.environmentSid, stored.bucketSid, stored.sid, body)
        : workflows.create(accountSid, d.environmentSid, d.bucketSid, body),
    onSuccess: async (w) => {
      setSaved(true);
      await qc.invalidateQueries({ queryKey: ['workflows', accountSid] });
      qc.setQueryData(['workflow', accountSid, w.bucketSid, w.environmentSid, w.sid], w);
      if (!stored) navigate(href(workflowHref(w)), { replace: true });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const body = build();
    if (!body) return;
    // One attempt's field errors at a time: a new save drops the last test's.
    test.reset();
    save.mutate(body);
  };

  // Template preview on a real stored request: debounced on the actions' configs.
  const configs = useMemo(() => actionsBody(d.actions).actions.map((x) => x.config), [d.actions]);
  const [debounced, setDebounced] = useState(configs);
  useEffect(() => {
    const t = setTimeout(() => setDebounced(configs), 400);
    return () => clearTimeout(t);
  }, [configs]);
  const previewEnv = /^[a-z0-9]{6}$/.test(d.environmentSid) ? d.environmentSid : null;
  const preview = useQuery({
    queryKey: ['workflowPreview', accountSid, d.bucketSid, previewEnv, d.trigger.type, sampleSid, debounced],
    queryFn: () =>
      workflows.preview(accountSid, previewEnv!, d.bucketSid, {
        triggerType: d.trigger.type,
        requestSid: sampleSid || null,
        configs: debounced,
      }),
    enabled: Boolean(d.bucketSid && previewEnv && can('requests:read')),
    placeholderData: (prev) => prev,
    retry: false,
  });

  const insert = (name: string) => {
    const f = focused.current;
    if (!f) return;
    const token = `{{${name}}}`;
    const { el } = f;
    const start = el.selectionStart ?? el.value.length;
    const end = el.selectionEnd ?? start;
    f.insert(el.value.slice(0, start) + token + el.value.slice(end));
    requestAnimationFrame(() => {
      el.focus();
      el.setSelectionRange(start + token.length, start + token.length);
    });
  };

  const test = useMutation({
    mutationFn: () => {
      const { actions, errors: errs } = actionsBody(d.actions);
      setClientErrors(errs);
      if (Object.keys(errs).length) throw new Error('Fix the fields marked above first.');
      return workflows.test(accountSid, stored!.environmentSid, stored!.bucketSid, stored!.sid, {
        requestSid: sampleSid || null,
        actions,
      });
    },
  });

  // A refused save or test (e.g. a masked secret whose URL changed origin) is shown at its field.
  const errors = { ...fieldErrors(save.error), ...fieldErrors(test.error), ...clientErrors };
  // Errors shown beside their fields are not repeated (with their API path) at the buttons, which
  // then only point up to them.
  const shownAt = ['name', ...actionFieldKeys(d.actions)];
  const atFields = (err: unknown) => {
    const keys = Object.keys(fieldErrors(err));
    return keys.length > 0 && keys.every((k) => shownAt.includes(k));
  };

  const title = stored ? stored.name : 'New workflow';
  return (
    <div className="page wf-edit">
      <div className="page-head">
        <h1>{title}</h1>
        {stored ? (
          <div className="row-actions">
            <Link className="btn" href={href(`${workflowHref(stored)}/executions`)}>
              Executions log
            </Link>
            {can('workflows:delete') ? (
              <button type="button" className="btn btn-danger-ghost" onClick={() => setDeleting(true)}>
                Delete
              </button>
            ) : null}
          </div>
        ) : null}
      </div>
      <p className="hint intro">
        <Link href={href('/settings/workflows')}>← All workflows</Link>
        {stored ? (
          <>
            {' '}
            · <span className="mono">{stored.sid}</span>
          </>
        ) : null}
      </p>
      <div className="wf-layout">
        <form className="stack wf-form" onSubmit={submit} noValidate aria-label="Workflow">
          <section className="panel stack">
            <div className="grid-2">
              <div className="field">
                <label htmlFor="wf-name">Name</label>
                <input
                  id="wf-name"
                  required
                  maxLength={200}
                  placeholder="e.g. Alert on checkout errors"
                  value={d.name}
                  aria-invalid={errors.name ? true : undefined}
                  onChange={(e) => set({ name: e.target.value })}
                />
                {errors.name ? (
                  <div className="field-error" role="alert">
                    {errors.name}
                  </div>
                ) : null}
              </div>
              <label className="check wf-active">
                <input
                  type="checkbox"
                  checked={d.isActive}
                  onChange={(e) => set({ isActive: e.target.checked })}
                />
                Active (unchecked: paused, it never fires)
              </label>
            </div>
            <div className="grid-2">
              <div className="field">
                <label htmlFor="wf-bucket">Bucket</label>
                <select
                  id="wf-bucket"
                  value={d.bucketSid}
                  disabled={Boolean(stored)}
                  onChange={(e) => set({ bucketSid: e.target.value })}
                >
                  <option value="">Choose a bucket…</option>
                  {(bucketList.data?.records ?? []).map((b) => (
                    <option key={b.sid} value={b.sid}>
                      {b.name}
                    </option>
                  ))}
                </select>
              </div>
              <div className="field">
                <label htmlFor="wf-env">Environment sid</label>
                <input
                  id="wf-env"
                  className="mono"
                  maxLength={6}
                  placeholder="e.g. prod01"
                  value={d.environmentSid}
                  disabled={Boolean(stored)}
                  aria-describedby="wf-env-hint"
                  onChange={(e) => set({ environmentSid: e.target.value.trim() })}
                />
                <div id="wf-env-hint" className="hint">
                  {stored
                    ? 'A workflow stays in its bucket and environment.'
                    : '6 lowercase letters or digits: the environment of the traffic it watches.'}
                </div>
              </div>
            </div>
            <div className="field">
              <label htmlFor="wf-description">Description (optional)</label>
              <textarea
                id="wf-description"
                rows={2}
                maxLength={2000}
                value={d.description}
                onChange={(e) => set({ description: e.target.value })}
              />
            </div>
          </section>
          <section className="panel">
            <TriggerEditor value={d.trigger} onChange={(trigger) => set({ trigger })} errors={errors} />
          </section>
          <section className="panel">
            <ActionsEditor
              value={d.actions}
              onChange={(actions) => set({ actions })}
              errors={errors}
              rendered={preview.data?.rendered}
              nextKey={() => ++keyRef.current}
              onFocusField={(f) => {
                focused.current = f;
                setCanInsert(true);
              }}
            />
          </section>
          <div className="panel wf-save">
            <FormError error={save.error} shownAt={shownAt} />
            {Object.keys(clientErrors).length || atFields(save.error) ? (
              <div className="form-error" role="alert">
                Fix the fields marked above.
              </div>
            ) : null}
            {saved && !save.isPending ? (
              <div className="hint ok-text" role="status">
                Saved.
              </div>
            ) : null}
            <div className="actions">
              <Link className="btn" href={href('/settings/workflows')}>
                {stored ? 'Back' : 'Cancel'}
              </Link>
              {mayWrite ? (
                <button
                  type="submit"
                  className="btn btn-primary"
                  disabled={
                    save.isPending ||
                    !d.name.trim() ||
                    !d.bucketSid ||
                    !/^[a-z0-9]{6}$/.test(d.environmentSid)
                  }
                >
                  {save.isPending ? 'Saving…' : stored ? 'Save workflow' : 'Create workflow'}
                </button>
              ) : null}
            </div>
          </div>
        </form>
        <aside className="stack wf-side">
          <VariablePicker
            preview={preview.data}
            error={preview.error}
            pending={preview.isFetching}
            canInsert={canInsert}
            onInsert={insert}
            requestSid={sampleSid}
            onRequestSid={setSampleSid}
            waiting={
              !can('requests:read')
                ? 'Example values need the requests:read scope.'
                : !d.bucketSid || !previewEnv
                  ? 'Choose a bucket and an environment to see every variable with its value on a real stored request.'
                  : undefined
            }
          />
          {stored && mayWrite ? (
            <section className="panel" aria-labelledby="wf-test-title">
              <h2 id="wf-test-title">Send a test</h2>
              <p className="hint">
                Runs each action above once (unsaved edits included), no retries, on the sample request.
                Receivers get real calls; nothing is written to the executions log.
              </p>
              <button
                type="button"
                className="btn"
                disabled={test.isPending}
                onClick={() => {
                  save.reset();
                  test.mutate();
                }}
              >
                {test.isPending ? 'Sending…' : 'Send a test'}
              </button>
              <FormError error={test.error} shownAt={shownAt} />
              {atFields(test.error) ? (
                <div className="form-error" role="alert">
                  Fix the fields marked in the actions.
                </div>
              ) : null}
              {test.data ? <TestResults result={test.data} /> : null}
            </section>
          ) : null}
        </aside>
      </div>
      {deleting && stored ? (
        <DeleteWorkflow
          workflow={stored}
          onClose={() => setDeleting(false)}
          onDone={async () => {
            await qc.invalidateQueries({ queryKey: ['workflows', accountSid] });
            navigate(href('/settings/workflows'));
          }}
        />
      ) : null}
    </div>
  );
}

function TestResults({ result }: { result: WorkflowTestResult }) {
  return (
    <div className="stack wf-test-results" role="status">
      <p className="small">
        Sample: {result.sample.description}. Execution header{' '}
        <code className="break">{result.executionSid}</code>
      </p>
      <DataTable
        columns={['#', 'Action', 'Result', 'Answer']}
        wrapClassName="wf-table"
        aria-label="Test results"
      >
        {result.results.map((r) => (
          <tr key={r.index}>
            <td>{r.index + 1}</td>
            <td>{r.type}</td>
            <td>
              <span className={`badge ${r.status === 'succeeded' ? 'badge-ok' : 'badge-off'}`}>
                {r.status}
              </span>
            </td>
            <td className="small">
              {r.statusCode !== null ? <span className="mono nowrap">HTTP {r.statusCode}</span> : null}
              {r.messageId ? <span className="mono">sent {r.messageId}</span> : null}
              {r.error ? <div className="wf-wrap">{r.error}</div> : null}
              <div className="muted">{r.durationMs} ms</div>
            </td>
          </tr>
        ))}
      </DataTable>
    </div>
  );
}
