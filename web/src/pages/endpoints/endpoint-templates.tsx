import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { placeholderName } from '../../../../services/api/endpoint-templates/endpoint-template-suggestions';
import { compileEndpointTemplates, parseEndpointPattern } from '../../../../services/shared/endpoint-pattern';
import { ApiError, fieldErrors } from '../../api/client';
import { endpointTemplates, type EndpointTemplate } from '../../api/endpoint-templates';
import type { MetricsScope } from '../../api/resources';
import { count } from '../../lib/format';
import { useAccountSid, useSession } from '../../lib/session';
import { Dialog, RemoveDialog } from '../../components/dialog';
import { FormError } from '../../components/form';
import { ErrorBox } from '../../components/state';

/**
 * Endpoint template rules on the Endpoints page (docs/processing.md, "Endpoint templates"):
 * the suggestions of the range with a "Merge into template" action each, the merge dialog (also
 * opened for the rows a person selects), and the bucket's rules with delete.
 */

/** One listed row of the Endpoints page. */
export interface ListedEndpoint {
  method: string;
  endpoint: string;
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];
const PREVIEW_ROWS = 12;

const isPlaceholder = (seg: string) => seg.startsWith('{') && seg.endsWith('}');

/**
 * A pattern merging the given endpoints: segments they share stay, a segment that differs becomes
 * a placeholder named after the segment before it. Endpoints of different lengths: the first
 * one's last segment becomes the placeholder (the person edits it in the dialog).
 */
export function proposePattern(endpoints: readonly string[]): string {
  const split = endpoints.filter((e) => e.startsWith('/')).map((e) => e.slice(1).split('/'));
  const first = split[0];
  if (!first) return '/';
  const sameLength = split.every((s) => s.length === first.length);
  const used = new Set<string>();
  const name = (i: number) => {
    const base = placeholderName(i > 0 ? first[i - 1] : undefined);
    let n = base;
    for (let k = 2; used.has(n); k++) n = `${base}${k}`;
    used.add(n);
    return `{${n}}`;
  };
  const segments = first.map((seg, i) => {
    const varies = sameLength ? split.some((s) => s[i] !== seg) : i === first.length - 1;
    if (isPlaceholder(seg)) {
      used.add(seg.slice(1, -1));
      return seg;
    }
    return varies ? name(i) : seg;
  });
  return `/${segments.join('/')}`;
}

/** The listed endpoints a pattern (and method) would merge, with the pattern's parse error. */
function previewOf(pattern: string, method: string, listed: readonly ListedEndpoint[]) {
  const parsed = parseEndpointPattern(pattern.trim());
  if (!parsed.ok) return { error: `Pattern ${parsed.error}`, matches: [] as ListedEndpoint[] };
  const m = compileEndpointTemplates([{ sid: '', pattern: pattern.trim(), method: method || null }]);
  const matches = m
    ? listed.filter(
        (l) => l.endpoint !== pattern.trim() && m.match(l.endpoint, l.method.toUpperCase()) !== null,
      )
    : [];
  return { error: null, matches };
}

const templatesKey = (accountSid: string, bucket: string) => ['endpoint-templates', accountSid, bucket];

/**
 * The dialog: the proposed pattern editable, an optional method, a live preview of the listed
 * endpoints it merges, and Save creating the rule. An API refusal is shown under the pattern.
 */
export function MergeDialog({
  bucket,
  initialPattern,
  listed,
  onClose,
  onSaved,
}: {
  bucket: string;
  initialPattern: string;
  listed: readonly ListedEndpoint[];
  onClose: () => void;
  onSaved?: () => void;
}) {
  const accountSid = useAccountSid();
  const qc = useQueryClient();
  const [pattern, setPattern] = useState(initialPattern);
  const [method, setMethod] = useState('');
  const preview = useMemo(() => previewOf(pattern, method, listed), [pattern, method, listed]);
  const save = useMutation({
    mutationFn: () =>
      endpointTemplates.create(accountSid, bucket, { pattern: pattern.trim(), method: method || null }),
    onSuccess: async () => {
      await qc.invalidateQueries({ queryKey: templatesKey(accountSid, bucket) });
      await qc.invalidateQueries({ queryKey: ['endpoint-template-suggestions', accountSid, bucket] });
      onSaved?.();
      onClose();
    },
  });
  const err = save.error;
  const apiPatternError =
    fieldErrors(err).pattern ??
    (err instanceof ApiError && typeof err.details['body.pattern'] === 'string'
      ? err.details['body.pattern']
      : undefined);
  const methodError = fieldErrors(err).method;
  const shown = preview.matches.slice(0, PREVIEW_ROWS);
  return (
    <Dialog title="Merge into template" onClose={onClose}>
      <form
        className="stack"
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate();
        }}
      >
        <p className="muted small">
          New requests whose path matches the pattern are stored under it: a <code>{'{name}'}</code> segment
          matches any one path segment. Requests already stored keep their endpoint until they age out.
        </p>
        <div className="field">
          <label htmlFor="tpl-pattern">Pattern</label>
          <input
            id="tpl-pattern"
            className="mono"
            value={pattern}
            spellCheck={false}
            autoComplete="off"
            aria-invalid={apiPatternError ? true : undefined}
            aria-describedby={apiPatternError ? 'tpl-pattern-error' : 'tpl-pattern-hint'}
            onChange={(e) => {
              setPattern(e.target.value);
              save.reset();
            }}
          />
          {apiPatternError ? (
            <div id="tpl-pattern-error" className="field-error" role="alert">
              Pattern {apiPatternError}
            </div>
          ) : (
            <div id="tpl-pattern-hint" className="hint">
              {preview.error ?? 'e.g. /coupons/{code}'}
            </div>
          )}
        </div>
        <div className="field">
          <label htmlFor="tpl-method">Method</label>
          <select
            id="tpl-method"
            value={method}
            aria-invalid={methodError ? true : undefined}
            onChange={(e) => {
              setMethod(e.target.value);
              save.reset();
            }}
          >
            <option value="">Every method</option>
            {METHODS.map((m) => (
              <option key={m}>{m}</option>
            ))}
          </select>
          {methodError ? (
            <div className="field-error" role="alert">
              Method {methodError}
            </div>
          ) : null}
        </div>
        <div className="preview-panel" aria-live="polite">
          <strong data-testid="merge-preview-count">
            {preview.error
              ? 'Fix the pattern to see what it merges'
              : preview.matches.length === 0
                ? 'Merges none of the listed endpoints'
                : `Merges ${preview.matches.length} listed endpoint${preview.matches.length === 1 ? '' : 's'}`}
          </strong>
          {shown.length ? (
            <ul className="delete-list mono small" data-testid="merge-preview">
              {shown.map((l) => (
                <li key={`${l.method} ${l.endpoint}`}>
                  {l.method} {l.endpoint}
                </li>
              ))}
              {preview.matches.length > shown.length ? (
                <li className="muted">and {preview.matches.length - shown.length} more</li>
              ) : null}
            </ul>
          ) : null}
        </div>
        {apiPatternError || methodError ? null : <FormError error={err} />}
        <div className="actions">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={save.isPending}>
            Save template
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/** The range's suggestions for the bucket, each with its "Merge into template" action. */
export function TemplateSuggestions({
  bucket,
  scope,
  listed,
}: {
  bucket: string;
  scope: MetricsScope;
  listed: readonly ListedEndpoint[];
}) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const [open, setOpen] = useState<string | null>(null);
  const suggestionList = useQuery({
    queryKey: [
      'endpoint-template-suggestions',
      accountSid,
      bucket,
      scope.startDate,
      scope.endDate,
      scope.environmentSid,
    ],
    queryFn: () =>
      endpointTemplates.suggestions(accountSid, bucket, {
        startDate: scope.startDate,
        endDate: scope.endDate,
        environmentSid: scope.environmentSid,
      }),
    enabled: can('metrics:read'),
  });
  const list = suggestionList.data?.suggestions ?? [];
  if (!list.length) return null;
  return (
    <section className="panel" aria-labelledby="tpl-suggestions-title">
      <div className="panel-head">
        <h2 id="tpl-suggestions-title">Suggested templates</h2>
        <span className="muted">endpoints that differ in one segment the automatic templating kept</span>
      </div>
      <ul className="template-list">
        {list.map((s) => (
          <li key={s.pattern} data-testid="template-suggestion">
            <div className="template-text">
              <code className="mono">{s.pattern}</code>
              <span className="muted small">
                {' '}
                merges {count(s.endpoints)} endpoints, {count(s.requests)} requests:{' '}
                <span className="mono">{s.examples.join(', ')}</span>
                {s.endpoints > s.examples.length ? ' …' : ''}
              </span>
            </div>
            {can('buckets:write') ? (
              <button
                type="button"
                className="btn btn-small"
                aria-label={`Merge into template ${s.pattern}`}
                onClick={() => setOpen(s.pattern)}
              >
                Merge into template
              </button>
            ) : null}
          </li>
        ))}
      </ul>
      {open !== null ? (
        <MergeDialog bucket={bucket} initialPattern={open} listed={listed} onClose={() => setOpen(null)} />
      ) : null}
    </section>
  );
}

/** The bucket's template rules in the order they are tried, each with Delete. */
export function TemplateRules({ bucket }: { bucket: string }) {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const [removing, setRemoving] = useState<EndpointTemplate | null>(null);
  const templateList = useQuery({
    queryKey: templatesKey(accountSid, bucket),
    queryFn: () => endpointTemplates.list(accountSid, bucket),
    enabled: can('buckets:read'),
  });
  if (!can('buckets:read')) return null;
  return (
    <section className="panel" aria-labelledby="tpl-rules-title">
      <div className="panel-head">
        <h2 id="tpl-rules-title">Template rules</h2>
        <span className="muted">tried in this order before the automatic templating</span>
      </div>
      {templateList.error ? (
        <ErrorBox error={templateList.error} />
      ) : !templateList.data ? null : templateList.data.records.length === 0 ? (
        <p className="muted">
          No rules: ids are templated automatically (<code>/users/{'{id}'}</code>). Select endpoints above and
          merge them to add one.
        </p>
      ) : (
        <ul className="template-list" aria-describedby="tpl-rules-note">
          {templateList.data.records.map((t) => (
            <li key={t.sid} data-testid="template-rule">
              <div className="template-text">
                <code className="mono">{t.pattern}</code>{' '}
                {t.method ? (
                  <span className="badge">{t.method}</span>
                ) : (
                  <span className="muted small">every method</span>
                )}
              </div>
              {can('buckets:write') ? (
                <button
                  type="button"
                  className="btn btn-small btn-danger-ghost"
                  aria-label={`Delete template ${t.pattern}`}
                  onClick={() => setRemoving(t)}
                >
                  Delete
                </button>
              ) : null}
            </li>
          ))}
        </ul>
      )}
      {templateList.data?.records.length ? (
        <p id="tpl-rules-note" className="muted small">
          A rule applies to requests received after it: requests stored before keep the endpoint they had, so
          their rows stay listed for ranges that include them.
        </p>
      ) : null}
      {removing ? (
        <RemoveDialog
          title="Delete template rule"
          confirmLabel="Delete rule"
          remove={() => endpointTemplates.remove(accountSid, bucket, removing.sid)}
          onDone={() => qc.invalidateQueries({ queryKey: templatesKey(accountSid, bucket) })}
          onClose={() => setRemoving(null)}
        >
          <p>
            New requests of <code className="mono">{removing.pattern}</code> will be templated automatically
            again. Requests already stored keep the endpoint they have.
          </p>
        </RemoveDialog>
      ) : null}
    </section>
  );
}
