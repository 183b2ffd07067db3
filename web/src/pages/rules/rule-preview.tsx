import { useMutation, useQuery } from '@tanstack/react-query';
import { useState, type ReactNode } from 'react';
import { fieldErrors } from '../../api/client';
import { requests } from '../../api/resources';
import type { PreviewSource } from '../../api/rules';
import { formatDateTime } from '../../lib/time';
import { useAccountSid, useSession } from '../../lib/session';
import { useQueryState } from '../../lib/url-state';
import { FormError } from '../../components/form';
import { useBuckets } from '../../api/queries';

/**
 * Pieces shared by the exclusion and redaction editors: the bucket/environment scope fields, and
 * the preview, which sends the draft rule and a sample to the API (the processor's code computes
 * the answer; nothing is matched or redacted in the browser).
 */

const ENV_SID = /^[a-z0-9]{6}$/;

/** `prod01, stag01` -> ['prod01', 'stag01']; empty -> null (every environment). */
export function parseEnvironments(text: string): string[] | null {
  const list = text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
  return list.length ? [...new Set(list)] : null;
}

/** The same check as the API's schema (6 lower-case letters or digits each, at most 100). */
export function environmentsError(text: string): string | undefined {
  const list = parseEnvironments(text) ?? [];
  const bad = list.find((s) => !ENV_SID.test(s));
  if (bad) return `“${bad}” is not an environment sid (6 lower-case letters or digits)`;
  if (list.length > 100) return 'At most 100 environments';
  return undefined;
}

/** Which buckets and environments a rule applies to; none ticked / empty = every one. */
export function ScopeFields({
  idPrefix,
  bucketSids,
  onBuckets,
  environments,
  onEnvironments,
  errors,
}: {
  idPrefix: string;
  bucketSids: string[];
  onBuckets: (sids: string[]) => void;
  environments: string;
  onEnvironments: (text: string) => void;
  errors: Record<string, string>;
}) {
  const list = useBuckets();
  const bucketError = Object.entries(errors).find(([k]) => k === 'buckets' || k.startsWith('buckets.'))?.[1];
  const envError =
    errors.environments ?? Object.entries(errors).find(([k]) => k.startsWith('environments.'))?.[1];
  return (
    <>
      <fieldset className="field">
        <legend>Buckets</legend>
        {list.data ? (
          <div className="check-list">
            {list.data.records.map((b) => (
              <label key={b.sid} className="check">
                <input
                  type="checkbox"
                  checked={bucketSids.includes(b.sid)}
                  onChange={(e) =>
                    onBuckets(
                      e.target.checked ? [...bucketSids, b.sid] : bucketSids.filter((s) => s !== b.sid),
                    )
                  }
                />
                {b.name}
              </label>
            ))}
          </div>
        ) : (
          <span className="muted small">Loading buckets…</span>
        )}
        <div className="hint">None ticked: every bucket, including buckets created later.</div>
        {bucketError ? (
          <div className="field-error" role="alert">
            {bucketError}
          </div>
        ) : null}
      </fieldset>
      <div className="field">
        <label htmlFor={`${idPrefix}-envs`}>Environments</label>
        <input
          id={`${idPrefix}-envs`}
          value={environments}
          placeholder="every environment"
          aria-invalid={envError ? true : undefined}
          aria-describedby={`${idPrefix}-envs-${envError ? 'error' : 'hint'}`}
          onChange={(e) => onEnvironments(e.target.value)}
        />
        {envError ? (
          <div id={`${idPrefix}-envs-error`} className="field-error" role="alert">
            {envError}
          </div>
        ) : (
          <div id={`${idPrefix}-envs-hint`} className="hint">
            Environment sids separated by commas, e.g. <code>prod01, stag01</code>; empty: every environment.
          </div>
        )}
      </div>
    </>
  );
}

/** Field errors of a preview call that concern the draft rule, keyed as the form's fields. */
export function ruleErrorsOf(err: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(fieldErrors(err))) if (k.startsWith('rule.')) out[k.slice(5)] = v;
  return out;
}

/**
 * The sample a preview runs on and the button that runs it. The picked stored request is in the
 * URL (`sampleBucket`, `sampleRequest`), so a preview on a stored request is a deep link; a pasted
 * record stays in the page (it can be large).
 */
export function RulePreview<T>({
  example,
  run,
  children,
  beforeRun,
  draft,
}: {
  example: Record<string, unknown>;
  run: (source: PreviewSource) => Promise<T>;
  children: (result: T) => ReactNode;
  /** checks the draft's fields and shows their errors; false stops the run (the API would refuse) */
  beforeRun: () => boolean;
  /** the draft rule as sent: a result computed for another draft is marked as outdated */
  draft: unknown;
}) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const { get, set } = useQueryState();
  const mayReadRequests = can('requests:read');
  const sampleBucket = get('sampleBucket') ?? get('bucket') ?? '';
  const sampleRequest = get('sampleRequest') ?? '';
  const [mode, setMode] = useState<'paste' | 'stored'>(sampleRequest && mayReadRequests ? 'stored' : 'paste');
  const [text, setText] = useState(() => JSON.stringify(example, null, 2));
  const [parseError, setParseError] = useState<string | null>(null);
  const bucketList = useBuckets({ enabled: mode === 'stored' });
  const recent = useQuery({
    queryKey: ['preview-requests', accountSid, sampleBucket],
    queryFn: () => requests.list(accountSid, sampleBucket, { limit: 25 }),
    enabled: mode === 'stored' && sampleBucket !== '',
  });
  const preview = useMutation({ mutationFn: run });
  const [ranWith, setRanWith] = useState('');
  const draftKey = JSON.stringify(draft);
  const recordErrors = Object.entries(fieldErrors(preview.error)).filter(
    ([k]) => k === 'record' || k.startsWith('record.') || k === 'requestSid' || k === 'bucketSid',
  );

  function submit() {
    setParseError(null);
    if (!beforeRun()) return;
    setRanWith(draftKey);
    if (mode === 'stored') {
      if (!sampleBucket || !sampleRequest) {
        setParseError('Pick a stored request first.');
        return;
      }
      preview.mutate({ bucketSid: sampleBucket, requestSid: sampleRequest });
      return;
    }
    let record: unknown;
    try {
      record = JSON.parse(text);
    } catch (err) {
      setParseError(`The sample is not valid JSON: ${(err as Error).message}`);
      return;
    }
    if (record === null || typeof record !== 'object' || Array.isArray(record)) {
      setParseError('The sample must be one JSON object (a record as the ingest API takes it).');
      return;
    }
    preview.mutate({
      record: record as Record<string, unknown>,
      ...(get('bucket') ? { bucketSid: get('bucket')! } : {}),
    });
  }

  return (
    <section className="panel preview-panel" aria-labelledby="preview-title">
      <h2 id="preview-title">Preview</h2>
      <p className="hint">
        Try the rule as drafted on one record before saving it. Tapline runs the processor’s own code on it;
        nothing is stored.
      </p>
      <div className="segmented" role="radiogroup" aria-label="Sample">
        <label className="check">
          <input
            type="radio"
            name="sample-mode"
            checked={mode === 'paste'}
            onChange={() => {
              preview.reset();
              setMode('paste');
            }}
          />
          Paste a record
        </label>
        <label className="check">
          <input
            type="radio"
            name="sample-mode"
            checked={mode === 'stored'}
            disabled={!mayReadRequests}
            onChange={() => {
              preview.reset();
              setMode('stored');
            }}
          />
          Pick a stored request
        </label>
      </div>
      {mode === 'paste' ? (
        <div className="field">
          <label htmlFor="preview-record">Sample record (JSON, as the batch ingest API takes it)</label>
          <textarea
            id="preview-record"
            className="mono"
            rows={12}
            spellCheck={false}
            value={text}
            onChange={(e) => {
              preview.reset();
              setText(e.target.value);
            }}
          />
        </div>
      ) : (
        <div className="grid-2">
          <div className="field">
            <label htmlFor="preview-bucket">Bucket of the request</label>
            <select
              id="preview-bucket"
              value={sampleBucket}
              onChange={(e) => {
                preview.reset();
                set({ sampleBucket: e.target.value || null, sampleRequest: null }, { replace: true });
              }}
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
            <label htmlFor="preview-request">Stored request</label>
            <select
              id="preview-request"
              value={sampleRequest}
              disabled={!sampleBucket}
              onChange={(e) => {
                preview.reset();
                set({ sampleRequest: e.target.value || null }, { replace: true });
              }}
            >
              <option value="">
                {recent.isPending && sampleBucket
                  ? 'Loading…'
                  : recent.data?.records.length
                    ? 'Choose…'
                    : 'None stored yet'}
              </option>
              {(recent.data?.records ?? []).map((r) => (
                <option key={r.sid} value={r.sid}>
                  {`${String(r.request.method ?? '')} ${String(r.request.path ?? '')} → ${String(
                    r.response?.statusCode ?? '–',
                  )} · ${formatDateTime(r.createdAt)}`}
                </option>
              ))}
            </select>
          </div>
        </div>
      )}
      {parseError ? (
        <div className="field-error" role="alert">
          {parseError}
        </div>
      ) : null}
      {recordErrors.length ? (
        <ul className="field-error" role="alert" aria-label="Problems with the sample">
          {recordErrors.map(([k, v]) => (
            <li key={k}>
              <code>{k}</code> {v}
            </li>
          ))}
        </ul>
      ) : null}
      {preview.error && !recordErrors.length ? <FormError error={preview.error} /> : null}
      <div className="actions">
        <button type="button" className="btn" onClick={submit} disabled={preview.isPending}>
          {preview.isPending ? 'Previewing…' : 'Run preview'}
        </button>
      </div>
      <div className="preview-result" aria-live="polite" data-testid="preview-result">
        {preview.data !== undefined && !preview.isPending && !preview.error ? (
          <>
            {ranWith !== draftKey ? (
              <p className="hint stale-note">The rule has changed since this preview: run it again.</p>
            ) : null}
            {children(preview.data)}
          </>
        ) : null}
      </div>
    </section>
  );
}

const looksJson = (s: string) => /^\s*[[{]/.test(s);

function parsedJson(v: unknown): unknown {
  if (typeof v !== 'string' || !looksJson(v)) return undefined;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * A record as indented JSON with the values at `changed` paths (the API's dotted paths) marked.
 * A JSON body held as a string is shown parsed, as the API compared it.
 */
export function HighlightedJson({ value, changed }: { value: unknown; changed: ReadonlySet<string> }) {
  return (
    <pre className="json-highlight" data-testid="preview-record">
      <Node value={value} path="" changed={changed} indent="" />
    </pre>
  );
}

function Node({
  value,
  path,
  changed,
  indent,
}: {
  value: unknown;
  path: string;
  changed: ReadonlySet<string>;
  indent: string;
}): ReactNode {
  const inner = parsedJson(value);
  if (inner !== undefined && typeof inner === 'object' && inner !== null)
    return (
      <>
        <span className="muted">(JSON text) </span>
        <Node value={inner} path={path} changed={changed} indent={indent} />
      </>
    );
  if (value !== null && typeof value === 'object') {
    const isArr = Array.isArray(value);
    const entries = isArr ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
    if (!entries.length) return isArr ? '[]' : '{}';
    const next = `${indent}  `;
    return (
      <>
        {isArr ? '[' : '{'}
        {'\n'}
        {entries.map(([k, v], i) => {
          const sub = isArr ? `${path}[${k}]` : path ? `${path}.${k}` : k;
          const hit = changed.has(sub);
          const line = (
            <>
              {next}
              {isArr ? null : <span className="json-key">{JSON.stringify(k)}</span>}
              {isArr ? null : ': '}
              <Node value={v} path={sub} changed={changed} indent={next} />
              {i < entries.length - 1 ? ',' : ''}
            </>
          );
          return (
            <span key={k}>
              {hit ? (
                <mark className="changed" title="Changed by the rule">
                  {line}
                </mark>
              ) : (
                line
              )}
              {'\n'}
            </span>
          );
        })}
        {indent}
        {isArr ? ']' : '}'}
      </>
    );
  }
  return <>{JSON.stringify(value) ?? 'undefined'}</>;
}
