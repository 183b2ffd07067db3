import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { fieldErrors } from '../../api/client';
import {
  exclusions,
  isCriteriaExclusion,
  type AnyExclusion,
  type Exclusion,
  type ExclusionInput,
  type ExclusionPreview,
} from '../../api/rules';
import { ConfirmDialog } from '../../components/dialog';
import { Field, FormError } from '../../components/form';
import { environmentsError, parseEnvironments, RulePreview, ruleErrorsOf, ScopeFields } from './rule-preview';
import { Empty, ErrorBox, Loading, QueryView } from '../../components/state';
import { useAccountSid, useSession } from '../../lib/session';
import { CriteriaExclusionForm, criteriaExclusionLabel } from './content-rules';
import { RuleFormEnd, RuleRowEnd } from './rule-row';
import { useRuleList } from './rule-list';
import { DataTable } from '../../components/data-table';

const METHODS = ['*', 'GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT'];

interface Draft {
  name: string;
  description: string;
  pathPattern: string;
  method: string;
  statusCode: string;
  buckets: string[];
  environments: string;
  isActive: boolean;
}

const EMPTY: Draft = {
  name: '',
  description: '',
  pathPattern: '',
  method: '*',
  statusCode: '',
  buckets: [],
  environments: '',
  isActive: true,
};

function draftOf(x: Exclusion): Draft {
  return {
    name: x.name,
    description: x.description,
    pathPattern: x.pathPattern,
    method: x.method,
    statusCode: x.statusCode === null ? '' : String(x.statusCode),
    buckets: x.buckets ?? [],
    environments: (x.environments ?? []).join(', '),
    isActive: x.isActive,
  };
}

function bodyOf(d: Draft): ExclusionInput & { isActive: boolean } {
  return {
    name: d.name.trim(),
    description: d.description,
    pathPattern: d.pathPattern.trim(),
    method: d.method as ExclusionInput['method'],
    statusCode: d.statusCode.trim() === '' ? null : Number(d.statusCode),
    buckets: d.buckets.length ? d.buckets : null,
    environments: parseEnvironments(d.environments),
    isActive: d.isActive,
  };
}

/** The API's schema checks (schemas/rules.schema.ts), so most mistakes show before a round trip. */
function validate(d: Draft): Record<string, string> {
  const e: Record<string, string> = {};
  if (!d.name.trim()) e.name = 'is required';
  else if (d.name.length > 200) e.name = 'must be at most 200 characters';
  if (d.description.length > 2000) e.description = 'must be at most 2000 characters';
  const p = d.pathPattern.trim();
  if (!p) e.pathPattern = 'is required';
  else if (!/^[/*]\S*$/.test(p)) e.pathPattern = 'must start with / or * and contain no spaces';
  else if (p.length > 2048) e.pathPattern = 'must be at most 2048 characters';
  const sc = d.statusCode.trim();
  if (sc && (!/^\d+$/.test(sc) || Number(sc) < 100 || Number(sc) > 599))
    e.statusCode = 'must be a whole number from 100 to 599, or empty for any status';
  const env = environmentsError(d.environments);
  if (env) e.environments = env;
  return e;
}

/** The name lists and notices show: a path rule's name, a criteria rule's description or criteria. */
const labelOf = (x: AnyExclusion): string => (isCriteriaExclusion(x) ? criteriaExclusionLabel(x) : x.name);
const activeOf = (x: AnyExclusion): boolean => (isCriteriaExclusion(x) ? x.enabled : x.isActive);

/** The same rule with its active flag flipped, in its own shape (PUT keeps the shape). */
function toggled(accountSid: string, x: AnyExclusion): Promise<AnyExclusion> {
  if (isCriteriaExclusion(x))
    return exclusions.updateCriteria(accountSid, x.sid, {
      criteria: x.criteria,
      description: x.description,
      enabled: !x.enabled,
    });
  return exclusions.update(accountSid, x.sid, { ...bodyOf(draftOf(x)), isActive: !x.isActive });
}

const EXAMPLE = {
  environmentSid: 'prod01',
  request: { method: 'GET', path: '/health?probe=1', headers: { 'user-agent': 'kube-probe/1.29' } },
  response: { statusCode: 200 },
  timings: { duration: 2 },
};

/** Exclusion rules: list, create, edit (with a preview), enable/disable, delete. `?rule=` deep-links. */
export function ExclusionsPage() {
  const { can } = useSession();
  const { editing, notice, deleting, setDeleting, list, toggle, remove, open, close } =
    useRuleList<AnyExclusion>({
      key: 'exclusions',
      list: exclusions.list,
      remove: exclusions.remove,
      toggled,
      labelOf,
      activeOf,
    });
  return (
    <div className="page">
      <div className="page-head">
        <h1>Exclusions</h1>
        {can('exclusions:write') && !editing ? (
          <button type="button" className="btn btn-primary" onClick={() => open('new')}>
            New exclusion
          </button>
        ) : null}
        {can('exclusions:write') && !editing ? (
          <button type="button" className="btn" onClick={() => open('new-criteria')}>
            Exclude by criteria
          </button>
        ) : null}
      </div>
      <p className="intro hint">
        A record whose path, method and status match an active exclusion is dropped on arrival: never stored,
        never counted in metrics, never sent to a workflow (the bucket’s setup page counts them). An exclusion
        by criteria uses the search language of stream views (<code>method:OPTIONS status:2xx</code>
        ).
      </p>
      {notice ? (
        <div className="notice ok-text" role="status">
          {notice}
        </div>
      ) : null}
      {editing ? <ExclusionEditor key={editing} sid={editing} onClose={close} /> : null}
      <section className="panel" aria-labelledby="exclusions-list-title">
        <h2 id="exclusions-list-title" className="sr-only">
          Exclusion rules
        </h2>
        <FormError error={toggle.error} />
        <QueryView
          query={list}
          isEmpty={(d) => d.records.length === 0}
          empty={
            <Empty title="No exclusion rules">
              Health checks and probes are the usual first candidates: e.g. <code>GET /health*</code>.
            </Empty>
          }
        >
          {(d) => (
            <DataTable columns={['Name', 'Method', 'Path pattern', 'Status', 'Scope', 'Active', 'Actions']}>
              {d.records.map((x) => (
                <tr key={x.sid} className={activeOf(x) ? undefined : 'muted'}>
                  {isCriteriaExclusion(x) ? (
                    <>
                      <td>
                        <strong>{x.description || 'By criteria'}</strong>
                      </td>
                      <td colSpan={3}>
                        <span className="small muted">criteria </span>
                        <code className="mono">{x.criteria}</code>
                      </td>
                    </>
                  ) : (
                    <>
                      <td>
                        <strong>{x.name}</strong>
                        {x.description ? <div className="small muted">{x.description}</div> : null}
                      </td>
                      <td className="mono">{x.method}</td>
                      <td className="mono">{x.pathPattern}</td>
                      <td>{x.statusCode ?? 'any'}</td>
                    </>
                  )}
                  <RuleRowEnd
                    label={labelOf(x)}
                    buckets={x.buckets}
                    environments={x.environments}
                    active={activeOf(x)}
                    canWrite={can('exclusions:write')}
                    canDelete={can('exclusions:delete')}
                    toggling={toggle.isPending}
                    onToggle={() => toggle.mutate(x)}
                    onOpen={() => open(x.sid)}
                    onDelete={() => setDeleting(x)}
                  />
                </tr>
              ))}
            </DataTable>
          )}
        </QueryView>
      </section>
      {deleting ? (
        <ConfirmDialog
          title={`Delete the exclusion “${labelOf(deleting)}”?`}
          confirmLabel="Delete exclusion"
          busy={remove.isPending}
          error={remove.error}
          onConfirm={() => remove.mutate(deleting.sid)}
          onClose={() => setDeleting(null)}
        >
          {isCriteriaExclusion(deleting) ? (
            <p>
              Records matching <code>{deleting.criteria}</code> are stored again from now on. The rule is kept
              as deleted (the API lists it with <code>includeDeleted=true</code>); records already dropped are
              not recovered.
            </p>
          ) : (
            <p>
              Records matching <code>{deleting.method}</code> <code>{deleting.pathPattern}</code> are stored
              again from now on (SDKs stop dropping them at their next settings refresh). Records already
              dropped are not recovered.
            </p>
          )}
        </ConfirmDialog>
      ) : null}
    </div>
  );
}

function ExclusionEditor({ sid, onClose }: { sid: string; onClose: (message?: string) => void }) {
  const accountSid = useAccountSid();
  const isNew = sid === 'new' || sid === 'new-criteria';
  const one = useQuery({
    queryKey: ['exclusion', accountSid, sid],
    queryFn: () => exclusions.get(accountSid, sid),
    enabled: !isNew,
  });
  if (sid === 'new-criteria') return <CriteriaExclusionForm onClose={onClose} />;
  if (!isNew && one.isPending) return <Loading />;
  if (!isNew && one.error) return <ErrorBox error={one.error} onRetry={() => void one.refetch()} />;
  if (one.data && isCriteriaExclusion(one.data))
    return <CriteriaExclusionForm existing={one.data} onClose={onClose} />;
  return (
    <ExclusionForm existing={isNew ? undefined : (one.data as Exclusion | undefined)} onClose={onClose} />
  );
}

function ExclusionForm({ existing, onClose }: { existing?: Exclusion; onClose: (message?: string) => void }) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const [d, setD] = useState<Draft>(existing ? draftOf(existing) : EMPTY);
  // Which check the person asked for: saving needs every field, a preview only those the rule
  // runs with (a draft previews without a name).
  const [touched, setTouched] = useState<'none' | 'preview' | 'save'>('none');
  const [previewErrors, setPreviewErrors] = useState<Record<string, string>>({});
  const editable = can('exclusions:write');
  const save = useMutation({
    mutationFn: () =>
      existing
        ? exclusions.update(accountSid, existing.sid, bodyOf(d))
        : exclusions.create(accountSid, bodyOf(d)),
    onSuccess: async (x) => {
      await qc.invalidateQueries({ queryKey: ['exclusions', accountSid] });
      qc.removeQueries({ queryKey: ['exclusion', accountSid, x.sid] });
      onClose(`“${labelOf(x)}” is saved${activeOf(x) ? ' and active' : ''}.`);
    },
  });
  const local = validate(d);
  // The API's own field errors win over the local ones for the same field.
  const { name: _unnamed, ...runnable } = local;
  const shown = touched === 'save' ? local : touched === 'preview' ? runnable : {};
  const errors = { ...shown, ...previewErrors, ...fieldErrors(save.error) };
  const patch = (p: Partial<Draft>) => {
    setD((cur) => ({ ...cur, ...p }));
    setPreviewErrors({});
  };
  // The preview needs no name; a draft without one still previews.
  const previewRule = () => bodyOf({ ...d, name: d.name.trim() || 'draft' });
  return (
    <div className="rule-editor">
      <section className="panel" aria-labelledby="editor-title">
        <h2 id="editor-title">{existing ? `Edit “${existing.name}”` : 'New exclusion'}</h2>
        <form
          className="stack"
          noValidate
          onSubmit={(e) => {
            e.preventDefault();
            setTouched('save');
            save.reset();
            if (Object.keys(local).length === 0) save.mutate();
          }}
        >
          <fieldset className="plain" disabled={!editable}>
            <Field
              id="exclusion-name"
              label="Name"
              value={d.name}
              maxLength={200}
              error={errors.name}
              onChange={(e) => patch({ name: e.target.value })}
            />
            <Field
              id="exclusion-description"
              label="Description"
              value={d.description}
              error={errors.description}
              onChange={(e) => patch({ description: e.target.value })}
            />
            <div className="grid-2">
              <div className="field">
                <label htmlFor="exclusion-method">Method</label>
                <select
                  id="exclusion-method"
                  value={d.method}
                  aria-invalid={errors.method ? true : undefined}
                  onChange={(e) => patch({ method: e.target.value })}
                >
                  {METHODS.map((m) => (
                    <option key={m} value={m}>
                      {m === '*' ? '* (every method)' : m}
                    </option>
                  ))}
                </select>
                {errors.method ? (
                  <div className="field-error" role="alert">
                    {errors.method}
                  </div>
                ) : null}
              </div>
              <Field
                id="exclusion-status"
                label="Status code"
                inputMode="numeric"
                placeholder="any"
                value={d.statusCode}
                error={errors.statusCode}
                hint="Empty: any status."
                onChange={(e) => patch({ statusCode: e.target.value })}
              />
            </div>
            <Field
              id="exclusion-path"
              label="Path pattern"
              className="mono"
              placeholder="/health*"
              value={d.pathPattern}
              error={errors.pathPattern}
              hint={
                <>
                  <code>*</code> matches any run of characters (<code>/health*</code>, <code>*/ping</code>,{' '}
                  <code>/v1/*/status</code>); the query string is not part of the path.
                </>
              }
              onChange={(e) => patch({ pathPattern: e.target.value })}
            />
            <ScopeFields
              idPrefix="exclusion"
              bucketSids={d.buckets}
              onBuckets={(buckets) => patch({ buckets })}
              environments={d.environments}
              onEnvironments={(environments) => patch({ environments })}
              errors={errors}
            />
            <label className="check">
              <input
                type="checkbox"
                checked={d.isActive}
                onChange={(e) => patch({ isActive: e.target.checked })}
              />
              Active
            </label>
          </fieldset>
          <RuleFormEnd
            error={save.error}
            editable={editable}
            pending={save.isPending}
            noun="exclusion"
            isNew={!existing}
            onClose={() => onClose()}
          />
        </form>
      </section>
      <RulePreview<ExclusionPreview>
        example={EXAMPLE}
        draft={{ ...previewRule(), name: undefined, description: undefined }}
        beforeRun={() => {
          // A draft previews without a name: only the fields the rule runs with must be valid.
          setTouched((t) => (t === 'save' ? t : 'preview'));
          const { name: _name, ...rest } = validate({ ...d, name: d.name.trim() || 'draft' });
          return Object.keys(rest).length === 0;
        }}
        run={async (source) => {
          try {
            return await exclusions.preview(accountSid, previewRule(), source);
          } catch (err) {
            setPreviewErrors(ruleErrorsOf(err));
            throw err;
          }
        }}
      >
        {(r) => <ExclusionVerdict result={r} />}
      </RulePreview>
    </div>
  );
}

function ExclusionVerdict({ result }: { result: ExclusionPreview }) {
  const c = result.compared;
  return (
    <div className="stack">
      <div className={`verdict ${result.excluded ? 'verdict-drop' : 'verdict-keep'}`} role="status">
        {result.excluded ? 'Would be dropped: never stored.' : 'Would be stored: the rule does not match.'}
      </div>
      {!result.applies ? (
        <p className="hint">The rule is limited to other buckets or environments than this record’s.</p>
      ) : null}
      <dl className="facts">
        <dt>Method</dt>
        <dd className="mono">{c.method || '–'}</dd>
        <dt>Path (query string removed)</dt>
        <dd className="mono">{c.path || '–'}</dd>
        <dt>Status</dt>
        <dd>{c.statusCode ?? 'none'}</dd>
        <dt>Environment</dt>
        <dd className="mono">{c.environmentSid ?? 'none'}</dd>
      </dl>
    </div>
  );
}
