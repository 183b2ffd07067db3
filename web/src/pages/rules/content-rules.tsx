import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { fieldErrors } from '../../api/client';
import {
  exclusions,
  redactions,
  type CriteriaExclusion,
  type CriteriaExclusionInput,
  type SensitiveRedaction,
  type SensitiveRedactionInput,
} from '../../api/rules';
import { Field } from '../../components/form';
import { environmentsError, parseEnvironments, ScopeFields } from './rule-preview';
import { useAccountSid, useSession } from '../../lib/session';
import { RuleFormEnd } from './rule-row';

/**
 * Content rules on the Exclusions and Redactions pages (docs/rules.md "Shape A rules"): a criteria
 * exclusion form, a typed redaction form (the type picker reads the API's catalogue of predefined
 * types), and the labels the lists show for their rows.
 */

/** What a content rule row is called in lists and notices: its description, else what it matches. */
export const criteriaExclusionLabel = (x: CriteriaExclusion): string => x.description || x.criteria;
export const sensitiveRedactionLabel = (x: SensitiveRedaction): string =>
  x.description || `${x.type} (${x.level})`;

/** A catalogue text with `code` spans (Markdown backticks) rendered as code. */
function codeSpans(text: string) {
  return text.split('`').map((part, i) => (i % 2 ? <code key={i}>{part}</code> : part));
}

/** The criteria text with a caret under the character the API's error points at. */
function PositionMarker({ text, position }: { text: string; position: number }) {
  if (!Number.isInteger(position) || position < 0 || position > text.length) return null;
  return (
    <pre className="mono small criteria-position" aria-hidden="true">
      {text}
      {'\n'}
      {' '.repeat(position)}^
    </pre>
  );
}

export function CriteriaExclusionForm({
  existing,
  onClose,
}: {
  existing?: CriteriaExclusion;
  onClose: (message?: string) => void;
}) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const editable = can('exclusions:write');
  const [criteria, setCriteria] = useState(existing?.criteria ?? '');
  const [description, setDescription] = useState(existing?.description ?? '');
  const [buckets, setBuckets] = useState<string[]>(existing?.buckets ?? []);
  const [environments, setEnvironments] = useState((existing?.environments ?? []).join(', '));
  const [enabled, setEnabled] = useState(existing?.enabled ?? true);
  const [touched, setTouched] = useState(false);
  // The text the last save sent: the API's position refers to it.
  const [sent, setSent] = useState('');
  const body = (): CriteriaExclusionInput & { enabled: boolean } => ({
    criteria: criteria.trim(),
    description: description.trim() || null,
    buckets: buckets.length ? buckets : null,
    environments: parseEnvironments(environments),
    enabled,
  });
  const save = useMutation({
    mutationFn: () => {
      setSent(criteria.trim());
      return existing
        ? exclusions.updateCriteria(accountSid, existing.sid, body())
        : exclusions.createCriteria(accountSid, body());
    },
    onSuccess: async (x) => {
      await qc.invalidateQueries({ queryKey: ['exclusions', accountSid] });
      qc.removeQueries({ queryKey: ['exclusion', accountSid, x.sid] });
      onClose(`“${criteriaExclusionLabel(x)}” is saved${x.enabled ? ' and enabled' : ''}.`);
    },
  });
  const local: Record<string, string> = {};
  if (!criteria.trim()) local.criteria = 'is required';
  else if (criteria.length > 4096) local.criteria = 'must be at most 4096 characters';
  if (description.length > 2000) local.description = 'must be at most 2000 characters';
  const envError = environmentsError(environments);
  if (envError) local.environments = envError;
  const api = fieldErrors(save.error);
  const errors = { ...(touched ? local : {}), ...api };
  const position = api.position !== undefined ? Number(api.position) : NaN;
  return (
    <section className="panel" aria-labelledby="editor-a-title">
      <h2 id="editor-a-title">
        {existing ? `Edit “${criteriaExclusionLabel(existing)}”` : 'New exclusion by search criteria'}
      </h2>
      <form
        className="stack"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          setTouched(true);
          save.reset();
          if (Object.keys(local).length === 0) save.mutate();
        }}
      >
        <fieldset className="plain" disabled={!editable}>
          <Field
            id="exclusion-a-description"
            label="Description"
            value={description}
            error={errors.description}
            onChange={(e) => setDescription(e.target.value)}
          />
          <div className="field">
            <label htmlFor="exclusion-a-criteria">Criteria</label>
            <textarea
              id="exclusion-a-criteria"
              className="mono"
              rows={2}
              value={criteria}
              placeholder="method:OPTIONS status:2xx"
              aria-invalid={errors.criteria ? true : undefined}
              aria-describedby={errors.criteria ? 'exclusion-a-criteria-error' : 'exclusion-a-criteria-hint'}
              onChange={(e) => {
                setCriteria(e.target.value);
                save.reset();
              }}
            />
            {errors.criteria ? (
              <div id="exclusion-a-criteria-error" className="field-error" role="alert">
                {errors.criteria}
                {Number.isFinite(position) && sent === criteria.trim() ? (
                  <PositionMarker text={sent} position={position} />
                ) : null}
              </div>
            ) : (
              <div id="exclusion-a-criteria-hint" className="hint">
                The search language of stream views: <code>method:</code>, <code>status:5xx</code>,{' '}
                <code>path:/internal/*</code>, <code>host:</code>, <code>env:</code>, <code>tag:k=v</code>,{' '}
                <code>-</code> to negate. A record matching every term is dropped.
              </div>
            )}
          </div>
          <ScopeFields
            idPrefix="exclusion-a"
            bucketSids={buckets}
            onBuckets={setBuckets}
            environments={environments}
            onEnvironments={setEnvironments}
            errors={errors}
          />
          <label className="check">
            <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} />
            Enabled
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
  );
}

const SCOPE_LABELS: Record<string, string> = {
  '*': 'everywhere',
  'request.headers': 'request headers',
  'request.query': 'query string',
  'request.url': 'URL',
  'request.body': 'request body',
  'response.headers': 'response headers',
  'response.body': 'response body',
};
const LEVEL_LABELS: Record<string, string> = {
  full: 'full: replaced by [REDACTED:type]',
  mask: 'mask: letters and digits become *',
  partial: 'partial: a safe part is kept (e.g. last 4 digits)',
};
const CUSTOM = '__custom__';

export function SensitiveRedactionForm({
  existing,
  onClose,
}: {
  existing?: SensitiveRedaction;
  onClose: (message?: string) => void;
}) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const editable = can('redactions:write');
  const catalogue = useQuery({
    queryKey: ['redaction-types', accountSid],
    queryFn: () => redactions.types(accountSid),
  });
  const predefined = catalogue.data?.types.map((t) => t.name) ?? [];
  const isCustomType = (t: string) => catalogue.data !== undefined && !predefined.includes(t);
  const [type, setType] = useState(existing?.type ?? 'email');
  const [custom, setCustom] = useState(existing ? existing.pattern !== null : false);
  const [pattern, setPattern] = useState(existing?.pattern ?? '');
  const [applyTo, setApplyTo] = useState<'key' | 'value'>(existing?.applyTo ?? 'value');
  const [level, setLevel] = useState<SensitiveRedaction['level']>(existing?.level ?? 'full');
  const [scopes, setScopes] = useState<string[]>(existing?.scopes ?? ['*']);
  const [redactAt, setRedactAt] = useState<'client' | 'server'>(existing?.redactAt ?? 'server');
  const [description, setDescription] = useState(existing?.description ?? '');
  const [buckets, setBuckets] = useState<string[]>(existing?.buckets ?? []);
  const [environments, setEnvironments] = useState((existing?.environments ?? []).join(', '));
  const [enabled, setEnabled] = useState(existing?.enabled ?? true);
  const [touched, setTouched] = useState(false);
  const body = (): SensitiveRedactionInput & { enabled: boolean } => ({
    type: type.trim(),
    level,
    scopes: scopes as SensitiveRedactionInput['scopes'],
    pattern: custom ? pattern : null,
    applyTo: custom ? applyTo : null,
    redactAt,
    description: description.trim() || null,
    buckets: buckets.length ? buckets : null,
    environments: parseEnvironments(environments),
    enabled,
  });
  const save = useMutation({
    mutationFn: () =>
      existing
        ? redactions.updateSensitive(accountSid, existing.sid, body())
        : redactions.createSensitive(accountSid, body()),
    onSuccess: async (x) => {
      await qc.invalidateQueries({ queryKey: ['redactions', accountSid] });
      qc.removeQueries({ queryKey: ['redaction', accountSid, x.sid] });
      onClose(`“${sensitiveRedactionLabel(x)}” is saved${x.enabled ? ' and enabled' : ''}.`);
    },
  });
  const local: Record<string, string> = {};
  if (!type.trim()) local.type = 'is required';
  if (custom && !pattern) local.pattern = 'a custom type needs a pattern';
  if (custom && type.trim() && !isCustomType(type.trim()) && catalogue.data)
    local.type = 'is a predefined type: give the custom type another name';
  if (description.length > 2000) local.description = 'must be at most 2000 characters';
  const envError = environmentsError(environments);
  if (envError) local.environments = envError;
  const errors = { ...(touched ? local : {}), ...fieldErrors(save.error) };
  const info = catalogue.data?.types.find((t) => t.name === type);
  const toggleScope = (s: string, on: boolean) => {
    if (s === '*') return setScopes(on ? ['*'] : []);
    const rest = scopes.filter((x) => x !== '*' && x !== s);
    setScopes(on ? [...rest, s] : rest);
  };
  return (
    <section className="panel" aria-labelledby="editor-a-title">
      <h2 id="editor-a-title">
        {existing ? `Edit “${sensitiveRedactionLabel(existing)}”` : 'New redaction by data type'}
      </h2>
      <form
        className="stack"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          setTouched(true);
          save.reset();
          if (Object.keys(local).length === 0) save.mutate();
        }}
      >
        <fieldset className="plain" disabled={!editable}>
          <Field
            id="redaction-a-description"
            label="Description"
            value={description}
            error={errors.description}
            onChange={(e) => setDescription(e.target.value)}
          />
          <div className="grid-2">
            <div className="field">
              <label htmlFor="redaction-a-type">Type</label>
              <select
                id="redaction-a-type"
                value={custom ? CUSTOM : type}
                aria-invalid={errors.type ? true : undefined}
                onChange={(e) => {
                  const v = e.target.value;
                  if (v === CUSTOM) {
                    setCustom(true);
                    setType(isCustomType(type) ? type : '');
                  } else {
                    setCustom(false);
                    setType(v);
                  }
                }}
              >
                {predefined.map((t) => (
                  <option key={t} value={t}>
                    {t}
                  </option>
                ))}
                {!custom && !catalogue.data ? <option value={type}>{type}</option> : null}
                <option value={CUSTOM}>custom pattern…</option>
              </select>
              {errors.type && !custom ? (
                <div className="field-error" role="alert">
                  {errors.type}
                </div>
              ) : info ? (
                <div className="hint">
                  {info.description}. Matches e.g. <code>{info.examples.matches[0]}</code>
                  {info.examples.nonMatches[0] ? (
                    <>
                      , not <code>{info.examples.nonMatches[0]}</code>
                    </>
                  ) : null}
                  .
                </div>
              ) : catalogue.error ? (
                <div className="field-error">The list of types could not be loaded.</div>
              ) : null}
            </div>
            <div className="field">
              <label htmlFor="redaction-a-level">Level</label>
              <select
                id="redaction-a-level"
                value={level}
                onChange={(e) => setLevel(e.target.value as SensitiveRedaction['level'])}
              >
                {(catalogue.data?.levels ?? ['full', 'mask', 'partial']).map((l) => (
                  <option key={l} value={l}>
                    {LEVEL_LABELS[l] ?? l}
                  </option>
                ))}
              </select>
              {errors.level ? (
                <div className="field-error" role="alert">
                  {errors.level}
                </div>
              ) : info && level === 'partial' ? (
                <div className="hint">Keeps {codeSpans(info.partial)}</div>
              ) : null}
            </div>
          </div>
          {custom ? (
            <>
              <div className="grid-2">
                <Field
                  id="redaction-a-name"
                  label="Custom type name"
                  placeholder="customer-ref"
                  value={type}
                  error={errors.type}
                  hint="Shown in the mark: [REDACTED:customer-ref]"
                  onChange={(e) => setType(e.target.value)}
                />
                <div className="field">
                  <label htmlFor="redaction-a-apply">Look in</label>
                  <select
                    id="redaction-a-apply"
                    value={applyTo}
                    onChange={(e) => setApplyTo(e.target.value as 'key' | 'value')}
                  >
                    <option value="value">values: any text matching the pattern</option>
                    <option value="key">keys: fields whose name matches (value redacted)</option>
                  </select>
                  {errors.applyTo ? (
                    <div className="field-error" role="alert">
                      {errors.applyTo}
                    </div>
                  ) : null}
                </div>
              </div>
              <Field
                id="redaction-a-pattern"
                label="Pattern (RE2 regular expression)"
                className="mono"
                placeholder="CUST-[0-9]{6}"
                value={pattern}
                error={errors.pattern}
                hint={
                  <>
                    Unanchored and case-sensitive: <code>(?i)</code> ignores case; no backreferences or
                    lookarounds.
                  </>
                }
                onChange={(e) => setPattern(e.target.value)}
              />
            </>
          ) : null}
          <fieldset className="field">
            <legend>Where</legend>
            {(catalogue.data?.scopes ?? ['*']).map((s) => (
              <label key={s} className="check">
                <input
                  type="checkbox"
                  checked={scopes.includes(s)}
                  onChange={(e) => toggleScope(s, e.target.checked)}
                />
                {SCOPE_LABELS[s] ?? s} <code className="small">{s}</code>
              </label>
            ))}
            {errors.scopes || errors['scopes.0'] ? (
              <div className="field-error" role="alert">
                {errors.scopes ?? errors['scopes.0']}
              </div>
            ) : null}
          </fieldset>
          <fieldset className="field">
            <legend>Applied by</legend>
            <label className="check">
              <input
                type="radio"
                name="redact-at-a"
                checked={redactAt === 'server'}
                onChange={() => setRedactAt('server')}
              />
              Tapline, on arrival (<code>server</code>)
            </label>
            <label className="check">
              <input
                type="radio"
                name="redact-at-a"
                checked={redactAt === 'client'}
                onChange={() => setRedactAt('client')}
              />
              SDKs before sending, and Tapline again as a safety net (<code>client</code>)
            </label>
          </fieldset>
          <ScopeFields
            idPrefix="redaction-a"
            bucketSids={buckets}
            onBuckets={setBuckets}
            environments={environments}
            onEnvironments={setEnvironments}
            errors={errors}
          />
          <label className="check">
            <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.target.checked)} />
            Enabled
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
  );
}
