import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { fieldErrors } from '../../api/client';
import {
  isSensitiveRedaction,
  redactions,
  type AnyRedaction,
  type Redaction,
  type RedactionInput,
  type RedactionPreview,
} from '../../api/rules';
import { ConfirmDialog } from '../../components/dialog';
import { Field, FormError } from '../../components/form';
import {
  environmentsError,
  HighlightedJson,
  parseEnvironments,
  RulePreview,
  ruleErrorsOf,
  ScopeFields,
} from './rule-preview';
import { Empty, ErrorBox, Loading, QueryView } from '../../components/state';
import { useAccountSid, useSession } from '../../lib/session';
import { SensitiveRedactionForm, sensitiveRedactionLabel } from './content-rules';
import { RuleFormEnd, RuleRowEnd } from './rule-row';
import { useRuleList } from './rule-list';
import { RECOMMENDED_REDACTIONS } from '../../../../schemas/recommended-redactions';

type RedactionType = RedactionInput['redactionType'];
const TYPES: { value: RedactionType; label: string }[] = [
  { value: 'mask', label: 'mask: letters and digits become *' },
  { value: 'remove', label: 'remove: the field is deleted' },
  { value: 'hash', label: 'hash: SHA-256 of the value' },
  { value: 'replace', label: 'replace: a fixed value' },
];

interface Draft {
  name: string;
  description: string;
  fieldPath: string;
  redactionType: RedactionType;
  replacementValue: string;
  redactAt: 'server' | 'client';
  buckets: string[];
  environments: string;
  isActive: boolean;
}

const EMPTY: Draft = {
  name: '',
  description: '',
  fieldPath: '',
  redactionType: 'mask',
  replacementValue: '',
  redactAt: 'server',
  buckets: [],
  environments: '',
  isActive: true,
};

function draftOf(x: Redaction): Draft {
  return {
    name: x.name,
    description: x.description,
    fieldPath: x.fieldPath,
    redactionType: x.redactionType,
    replacementValue: x.replacementValue ?? '',
    redactAt: x.redactAt,
    buckets: x.buckets ?? [],
    environments: (x.environments ?? []).join(', '),
    isActive: x.isActive,
  };
}

function bodyOf(d: Draft): RedactionInput & { isActive: boolean } {
  return {
    name: d.name.trim(),
    description: d.description,
    fieldPath: d.fieldPath.trim(),
    redactionType: d.redactionType,
    replacementValue: d.redactionType === 'replace' ? d.replacementValue : null,
    redactAt: d.redactAt,
    buckets: d.buckets.length ? d.buckets : null,
    environments: parseEnvironments(d.environments),
    isActive: d.isActive,
  };
}

/**
 * The API's schema checks (schemas/rules.schema.ts). The field path's own syntax is checked by the
 * API (its parser is the processor's); its message shows under the field.
 */
function validate(d: Draft): Record<string, string> {
  const e: Record<string, string> = {};
  if (!d.name.trim()) e.name = 'is required';
  else if (d.name.length > 200) e.name = 'must be at most 200 characters';
  if (d.description.length > 2000) e.description = 'must be at most 2000 characters';
  const p = d.fieldPath.trim();
  if (!p) e.fieldPath = 'is required';
  else if (!p.startsWith('$') || p.length < 2)
    e.fieldPath = 'must start with $, e.g. $.request.body.password';
  else if (p.length > 1024) e.fieldPath = 'must be at most 1024 characters';
  if (d.redactionType === 'replace' && d.replacementValue.length > 1000)
    e.replacementValue = 'must be at most 1000 characters';
  const env = environmentsError(d.environments);
  if (env) e.environments = env;
  return e;
}

/**
 * The name lists and notices show: a field rule's name, a sensitive-data rule's description or type and
 * level.
 */
const labelOf = (x: AnyRedaction): string => (isSensitiveRedaction(x) ? sensitiveRedactionLabel(x) : x.name);
const activeOf = (x: AnyRedaction): boolean => (isSensitiveRedaction(x) ? x.enabled : x.isActive);

/** The same rule with its active flag flipped, in its own shape (PUT keeps the shape). */
function toggled(accountSid: string, x: AnyRedaction): Promise<AnyRedaction> {
  if (isSensitiveRedaction(x))
    return redactions.updateSensitive(accountSid, x.sid, {
      type: x.type,
      level: x.level,
      scopes: x.scopes,
      pattern: x.pattern,
      applyTo: x.applyTo,
      redactAt: x.redactAt,
      description: x.description,
      enabled: !x.enabled,
    });
  return redactions.update(accountSid, x.sid, { ...bodyOf(draftOf(x)), isActive: !x.isActive });
}

const EXAMPLE = {
  environmentSid: 'prod01',
  request: {
    method: 'POST',
    path: '/v1/signup?ref=mail',
    headers: { authorization: 'Bearer sk_live_abc123', 'content-type': 'application/json' },
    body: JSON.stringify({
      email: 'ada@example.com',
      password: 'correct horse',
      card: { number: '4111-1111-1111-1111' },
    }),
  },
  response: { statusCode: 201, body: JSON.stringify({ id: 42, token: 'tok_9f8e7d' }) },
  timings: { duration: 38 },
};

/** One click for the recommended rules (every new account starts with them), shown while an account has no redaction at all. */
function RecommendedRedactions({ onAdded }: { onAdded: (count: number) => void }) {
  const accountSid = useAccountSid();
  const qc = useQueryClient();
  const add = useMutation({
    mutationFn: async () => {
      // One after the other: a failure stops at the rule it names, the ones before stay listed.
      for (const r of RECOMMENDED_REDACTIONS)
        await redactions.createSensitive(accountSid, {
          type: r.type,
          level: r.level,
          description: r.description,
          redactAt: 'server',
          enabled: true,
        });
      return RECOMMENDED_REDACTIONS.length;
    },
    onSettled: () => qc.invalidateQueries({ queryKey: ['redactions', accountSid] }),
    onSuccess: onAdded,
  });
  return (
    <div className="stack">
      <p className="small muted">
        Recommended, by data type (every new account starts with them): Authorization headers and credentials,
        passwords, secrets, tokens, cookies, API keys and JSON Web Tokens in full, card numbers but their last
        4 digits. Tapline redacts them before records are stored or sent to a workflow, in every bucket and
        environment; each is an ordinary rule afterwards.
      </p>
      <FormError error={add.error} />
      <div>
        <button
          type="button"
          className="btn btn-primary"
          disabled={add.isPending}
          onClick={() => add.mutate()}
        >
          {add.isPending ? 'Adding…' : 'Add the recommended redactions'}
        </button>
      </div>
    </div>
  );
}

/** Redaction rules: list, create, edit (with a preview), enable/disable, delete. `?rule=` deep-links. */
export function RedactionsPage() {
  const { can } = useSession();
  const { editing, notice, deleting, setDeleting, list, toggle, remove, open, close } =
    useRuleList<AnyRedaction>({
      key: 'redactions',
      list: redactions.list,
      remove: redactions.remove,
      toggled,
      labelOf,
      activeOf,
    });
  return (
    <div className="page">
      <div className="page-head">
        <h1>Redactions</h1>
        {can('redactions:write') && !editing ? (
          <button type="button" className="btn btn-primary" onClick={() => open('new')}>
            New redaction
          </button>
        ) : null}
        {can('redactions:write') && !editing ? (
          <button type="button" className="btn" onClick={() => open('new-type')}>
            Redact a data type
          </button>
        ) : null}
      </div>
      <p className="intro hint">
        A redaction masks, removes, hashes or replaces one field of every record before it is stored or sent
        to a workflow (<code>server</code>), or has SDKs do it before sending (<code>client</code>). Records
        stored earlier keep their values. A redaction by data type finds emails, card numbers, tokens and
        other secrets wherever they appear (headers, query, URL, bodies), or a pattern of your own.
      </p>
      {notice ? (
        <div className="notice ok-text" role="status">
          {notice}
        </div>
      ) : null}
      {editing ? <RedactionEditor key={editing} sid={editing} onClose={close} /> : null}
      <section className="panel" aria-labelledby="redactions-list-title">
        <h2 id="redactions-list-title" className="sr-only">
          Redaction rules
        </h2>
        <FormError error={toggle.error} />
        <QueryView
          query={list}
          isEmpty={(d) => d.records.length === 0}
          empty={
            <Empty title="No redaction rules">
              <p>
                Until a rule exists, traffic is stored as sent: <code>Authorization</code> headers, passwords,
                API keys and card numbers included. Passwords, tokens and card numbers are the usual first
                candidates: e.g. <code>$..password</code> or <code>$.request.headers.authorization</code>.
              </p>
              {can('redactions:write') ? (
                <RecommendedRedactions onAdded={(n) => close(`${n} recommended redactions are added.`)} />
              ) : null}
            </Empty>
          }
        >
          {(d) => (
            <div className="table-wrap">
              <table className="table">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Field path or type</th>
                    <th scope="col">Action or level</th>
                    <th scope="col">Applied by</th>
                    <th scope="col">Scope</th>
                    <th scope="col">Active</th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {d.records.map((x) => (
                    <tr key={x.sid} className={activeOf(x) ? undefined : 'muted'}>
                      {isSensitiveRedaction(x) ? (
                        <>
                          <td>
                            <strong>{x.description || 'By data type'}</strong>
                          </td>
                          <td>
                            <span className="mono">{x.type}</span>
                            {x.pattern !== null ? (
                              <div className="small muted">
                                {x.applyTo === 'key' ? 'keys matching ' : 'values matching '}
                                <code>{x.pattern}</code>
                              </div>
                            ) : null}
                            <div className="small muted">in {x.scopes.join(', ')}</div>
                          </td>
                          <td>{x.level}</td>
                          <td>{x.redactAt === 'server' ? 'Tapline' : 'SDKs and Tapline'}</td>
                        </>
                      ) : (
                        <>
                          <td>
                            <strong>{x.name}</strong>
                            {x.description ? <div className="small muted">{x.description}</div> : null}
                          </td>
                          <td className="mono">{x.fieldPath}</td>
                          <td>
                            {x.redactionType}
                            {x.redactionType === 'replace' && x.replacementValue !== null ? (
                              <span className="muted">
                                {' '}
                                with <code>{x.replacementValue}</code>
                              </span>
                            ) : null}
                          </td>
                          <td>{x.redactAt === 'server' ? 'Tapline' : 'SDKs'}</td>
                        </>
                      )}
                      <RuleRowEnd
                        label={labelOf(x)}
                        buckets={x.buckets}
                        environments={x.environments}
                        active={activeOf(x)}
                        canWrite={can('redactions:write')}
                        canDelete={can('redactions:delete')}
                        toggling={toggle.isPending}
                        onToggle={() => toggle.mutate(x)}
                        onOpen={() => open(x.sid)}
                        onDelete={() => setDeleting(x)}
                      />
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </QueryView>
      </section>
      {deleting ? (
        <ConfirmDialog
          title={`Delete the redaction “${labelOf(deleting)}”?`}
          confirmLabel="Delete redaction"
          busy={remove.isPending}
          error={remove.error}
          onConfirm={() => remove.mutate(deleting.sid)}
          onClose={() => setDeleting(null)}
        >
          {isSensitiveRedaction(deleting) ? (
            <p>
              From now on <code>{deleting.type}</code> data is stored as sent. The rule is kept as deleted
              (the API lists it with <code>includeDeleted=true</code>); records stored earlier stay redacted.
            </p>
          ) : (
            <p>
              From now on <code>{deleting.fieldPath}</code> is stored as sent
              {deleting.redactAt === 'client'
                ? ' (SDKs stop redacting it at their next settings refresh)'
                : ''}
              . Records stored earlier stay redacted.
            </p>
          )}
        </ConfirmDialog>
      ) : null}
    </div>
  );
}

function RedactionEditor({ sid, onClose }: { sid: string; onClose: (message?: string) => void }) {
  const accountSid = useAccountSid();
  const isNew = sid === 'new' || sid === 'new-type';
  const one = useQuery({
    queryKey: ['redaction', accountSid, sid],
    queryFn: () => redactions.get(accountSid, sid),
    enabled: !isNew,
  });
  if (sid === 'new-type') return <SensitiveRedactionForm onClose={onClose} />;
  if (!isNew && one.isPending) return <Loading />;
  if (!isNew && one.error) return <ErrorBox error={one.error} onRetry={() => void one.refetch()} />;
  if (one.data && isSensitiveRedaction(one.data))
    return <SensitiveRedactionForm existing={one.data} onClose={onClose} />;
  return (
    <RedactionForm existing={isNew ? undefined : (one.data as Redaction | undefined)} onClose={onClose} />
  );
}

function RedactionForm({ existing, onClose }: { existing?: Redaction; onClose: (message?: string) => void }) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const [d, setD] = useState<Draft>(existing ? draftOf(existing) : EMPTY);
  // Which check the person asked for: saving needs every field, a preview only those the rule
  // runs with (a draft previews without a name).
  const [touched, setTouched] = useState<'none' | 'preview' | 'save'>('none');
  const [previewErrors, setPreviewErrors] = useState<Record<string, string>>({});
  const editable = can('redactions:write');
  const save = useMutation({
    mutationFn: () =>
      existing
        ? redactions.update(accountSid, existing.sid, bodyOf(d))
        : redactions.create(accountSid, bodyOf(d)),
    onSuccess: async (x) => {
      await qc.invalidateQueries({ queryKey: ['redactions', accountSid] });
      qc.removeQueries({ queryKey: ['redaction', accountSid, x.sid] });
      onClose(`“${labelOf(x)}” is saved${activeOf(x) ? ' and active' : ''}.`);
    },
  });
  const local = validate(d);
  const { name: _unnamed, ...runnable } = local;
  const shown = touched === 'save' ? local : touched === 'preview' ? runnable : {};
  const errors = { ...shown, ...previewErrors, ...fieldErrors(save.error) };
  const patch = (p: Partial<Draft>) => {
    setD((cur) => ({ ...cur, ...p }));
    setPreviewErrors({});
  };
  return (
    <div className="rule-editor">
      <section className="panel" aria-labelledby="editor-title">
        <h2 id="editor-title">{existing ? `Edit “${existing.name}”` : 'New redaction'}</h2>
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
              id="redaction-name"
              label="Name"
              value={d.name}
              maxLength={200}
              error={errors.name}
              onChange={(e) => patch({ name: e.target.value })}
            />
            <Field
              id="redaction-description"
              label="Description"
              value={d.description}
              error={errors.description}
              onChange={(e) => patch({ description: e.target.value })}
            />
            <Field
              id="redaction-field"
              label="Field path"
              className="mono"
              placeholder="$..password"
              value={d.fieldPath}
              error={errors.fieldPath}
              hint={
                <>
                  <code>$.request.body.card.number</code>, <code>$.request.headers.authorization</code>,{' '}
                  <code>$.request.queryString.token</code>, <code>$..password</code> (any depth, both bodies).
                </>
              }
              onChange={(e) => patch({ fieldPath: e.target.value })}
            />
            <div className="grid-2">
              <div className="field">
                <label htmlFor="redaction-type">Action</label>
                <select
                  id="redaction-type"
                  value={d.redactionType}
                  aria-invalid={errors.redactionType ? true : undefined}
                  onChange={(e) => patch({ redactionType: e.target.value as RedactionType })}
                >
                  {TYPES.map((t) => (
                    <option key={t.value} value={t.value}>
                      {t.label}
                    </option>
                  ))}
                </select>
                {errors.redactionType ? (
                  <div className="field-error" role="alert">
                    {errors.redactionType}
                  </div>
                ) : null}
              </div>
              {d.redactionType === 'replace' ? (
                <Field
                  id="redaction-replacement"
                  label="Replacement value"
                  value={d.replacementValue}
                  error={errors.replacementValue}
                  hint="The value every matched field gets (may be empty)."
                  onChange={(e) => patch({ replacementValue: e.target.value })}
                />
              ) : (
                <div />
              )}
            </div>
            <fieldset className="field">
              <legend>Applied by</legend>
              <label className="check">
                <input
                  type="radio"
                  name="redact-at"
                  checked={d.redactAt === 'server'}
                  onChange={() => patch({ redactAt: 'server' })}
                />
                <span>
                  Tapline, before storing (<code>server</code>)
                </span>
              </label>
              <label className="check">
                <input
                  type="radio"
                  name="redact-at"
                  checked={d.redactAt === 'client'}
                  onChange={() => patch({ redactAt: 'client' })}
                />
                <span>
                  The SDK, before sending (<code>client</code>): Tapline then does not apply it
                </span>
              </label>
            </fieldset>
            <ScopeFields
              idPrefix="redaction"
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
            noun="redaction"
            isNew={!existing}
            onClose={() => onClose()}
          />
        </form>
      </section>
      <RulePreview<RedactionPreview>
        example={EXAMPLE}
        draft={{ ...bodyOf(d), name: undefined, description: undefined }}
        beforeRun={() => {
          // A draft previews without a name: only the fields the rule runs with must be valid.
          setTouched((t) => (t === 'save' ? t : 'preview'));
          const { name: _name, ...rest } = validate({ ...d, name: d.name.trim() || 'draft' });
          return Object.keys(rest).length === 0;
        }}
        run={async (source) => {
          try {
            return await redactions.preview(
              accountSid,
              bodyOf({ ...d, name: d.name.trim() || 'draft' }),
              source,
            );
          } catch (err) {
            setPreviewErrors(ruleErrorsOf(err));
            throw err;
          }
        }}
      >
        {(r) => <RedactionResult result={r} clientSide={d.redactAt === 'client'} />}
      </RulePreview>
    </div>
  );
}

const show = (v: unknown) => (v === undefined ? '(removed)' : typeof v === 'string' ? v : JSON.stringify(v));

function RedactionResult({ result, clientSide }: { result: RedactionPreview; clientSide: boolean }) {
  const changed = new Set(result.changes.map((c) => c.path));
  return (
    <div className="stack">
      <div className={`verdict ${result.changed ? 'verdict-info' : 'verdict-neutral'}`} role="status">
        {!result.applies
          ? 'Not applied: the rule is limited to other buckets or environments than this record’s.'
          : result.changed
            ? `${result.changes.length} field${result.changes.length === 1 ? '' : 's'} redacted.`
            : 'No field matched: the record would be stored unchanged.'}
      </div>
      {clientSide ? (
        <p className="hint">
          A <code>client</code> rule: this is what the SDK does with it; Tapline itself stores what it
          receives.
        </p>
      ) : null}
      {result.changes.length ? (
        <div className="table-wrap">
          <table className="table" aria-label="Changed fields">
            <thead>
              <tr>
                <th scope="col">Field</th>
                <th scope="col">Before</th>
                <th scope="col">After</th>
              </tr>
            </thead>
            <tbody>
              {result.changes.map((c) => (
                <tr key={c.path}>
                  <td className="mono">{c.path}</td>
                  <td className="mono break">{show(c.before)}</td>
                  <td className="mono break">
                    <mark className="changed">{c.kind === 'removed' ? '(removed)' : show(c.after)}</mark>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <h3>The record after the rule</h3>
      <HighlightedJson value={result.after} changed={changed} />
    </div>
  );
}
