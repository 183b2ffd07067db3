import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { fieldErrors } from '../../api/client';
import { redactions, type Redaction, type RedactionPreview } from '../../api/rules';
import { Field } from '../../components/form';
import { HighlightedJson, RulePreview, ruleErrorsOf, ScopeFields } from './rule-preview';
import { useAccountSid, useSession } from '../../lib/session';
import { RuleFormEnd } from './rule-row';
import {
  type Draft,
  EMPTY,
  type RedactionType,
  activeOf,
  bodyOf,
  draftOf,
  labelOf,
  validate,
} from './redaction-draft';
import { DataTable } from '../../components/data-table';

const TYPES: { value: RedactionType; label: string }[] = [
  { value: 'mask', label: 'mask: letters and digits become *' },
  { value: 'remove', label: 'remove: the field is deleted' },
  { value: 'hash', label: 'hash: SHA-256 of the value' },
  { value: 'replace', label: 'replace: a fixed value' },
];

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

/** Creates or edits a field redaction, with a preview of what it does to an example record. */
export function RedactionForm({
  existing,
  onClose,
}: {
  existing?: Redaction;
  onClose: (message?: string) => void;
}) {
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
        <DataTable columns={['Field', 'Before', 'After']} aria-label="Changed fields">
          {result.changes.map((c) => (
            <tr key={c.path}>
              <td className="mono">{c.path}</td>
              <td className="mono break">{show(c.before)}</td>
              <td className="mono break">
                <mark className="changed">{c.kind === 'removed' ? '(removed)' : show(c.after)}</mark>
              </td>
            </tr>
          ))}
        </DataTable>
      ) : null}
      <h3>The record after the rule</h3>
      <HighlightedJson value={result.after} changed={changed} />
    </div>
  );
}
