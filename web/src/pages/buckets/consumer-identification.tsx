import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useMemo, useState } from 'react';
import { fieldErrors } from '../../api/client';
import { consumers, requests } from '../../api/resources';
import type { ConsumerIdentification, IdentificationPreview, IdentificationSource } from '../../api/types';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime } from '../../lib/time';
import { FormError } from '../../components/form';
import { QueryView } from '../../components/state';

type Kind = IdentificationSource['type'];

/** The API's limit on a bucket's sources. */
const MAX_SOURCES = 10;
/** Recent requests offered for the preview. */
const SAMPLES = 20;

const KINDS: { kind: Kind; label: string; hint: string }[] = [
  {
    kind: 'header',
    label: 'Request header',
    hint: 'The value of a request header, e.g. X-API-Key (the name in any case).',
  },
  {
    kind: 'bearer',
    label: 'Bearer token',
    hint: 'The token of "Authorization: Bearer …"; always stored as a keyed hash, never the token.',
  },
  {
    kind: 'jwtClaim',
    label: 'JWT claim',
    hint: 'A claim of the JWT in a header (sub, client_id, azp …), read without checking its signature: it only labels traffic.',
  },
  { kind: 'query', label: 'Query parameter', hint: 'The value of a query parameter, e.g. client_id.' },
];

/** One source being edited: every type's fields, so switching the type keeps what was typed. */
interface Draft {
  key: number;
  type: Kind;
  name: string;
  hash: boolean;
  claim: string;
  groupClaim: string;
  header: string;
}

let nextKey = 1;

function toDraft(s: IdentificationSource): Draft {
  const d: Draft = {
    key: nextKey++,
    type: s.type,
    name: '',
    hash: false,
    claim: '',
    groupClaim: '',
    header: '',
  };
  switch (s.type) {
    case 'header':
      return { ...d, name: s.name, hash: s.hash !== false };
    case 'query':
      return { ...d, name: s.name, hash: s.hash === true };
    case 'jwtClaim':
      return { ...d, claim: s.claim, groupClaim: s.groupClaim ?? '', header: s.header ?? 'Authorization' };
    case 'bearer':
      return d;
  }
}

/** What the API is sent: the fields of the draft's type, as typed (the API checks them). */
function toSource(d: Draft): IdentificationSource {
  switch (d.type) {
    case 'header':
      return { type: 'header', name: d.name.trim(), hash: d.hash };
    case 'query':
      return { type: 'query', name: d.name.trim(), hash: d.hash };
    case 'jwtClaim':
      return {
        type: 'jwtClaim',
        header: d.header.trim() || 'Authorization',
        claim: d.claim.trim(),
        ...(d.groupClaim.trim() ? { groupClaim: d.groupClaim.trim() } : {}),
      };
    case 'bearer':
      return { type: 'bearer' };
  }
}

/** A source in words, for the preview's answer. */
function describe(s: IdentificationSource): string {
  switch (s.type) {
    case 'header':
      return `request header ${s.name}`;
    case 'query':
      return `query parameter ${s.name}`;
    case 'jwtClaim':
      return `JWT claim ${s.claim}${s.groupClaim ? ` (group: ${s.groupClaim})` : ''}`;
    case 'bearer':
      return 'bearer token';
  }
}

/**
 * The API's validation messages by source and field: `sources.2.name` → row 2, field `name`; a
 * message about a source as a whole (an unknown type) is kept under the row with field `''`.
 */
function errorsBySource(err: unknown): Map<number, Map<string, string>> {
  const out = new Map<number, Map<string, string>>();
  for (const [key, message] of Object.entries(fieldErrors(err))) {
    const m = /^sources[.[/](\d+)\]?(?:[./]([A-Za-z]+))?/.exec(key);
    if (!m) continue;
    const row = Number(m[1]);
    const fields = out.get(row) ?? new Map<string, string>();
    const field = m[2] ?? '';
    if (!fields.has(field)) fields.set(field, message);
    out.set(row, fields);
  }
  return out;
}

/**
 * The bucket's consumer identification (docs/consumers.md): the ordered sources a call without a
 * consumer of its own is identified from, edited here and saved with PUT, the API's messages
 * beside the fields; and a preview of the draft against one of the bucket's recent requests,
 * computed by the API with the processor's code (a credential shows as its keyed-hash id).
 */
export function ConsumerIdentificationPanel({ bucketSid }: { bucketSid: string }) {
  const a = useAccountSid();
  const current = useQuery({
    queryKey: ['consumerIdentification', a, bucketSid],
    queryFn: () => consumers.identification(a, bucketSid),
  });
  return (
    <section className="panel" aria-labelledby="identification-title">
      <h2 id="identification-title">Consumer identification</h2>
      <p className="hint">
        Calls that do not name their consumer (the Node SDK&apos;s <code>tapline.identify</code>,
        OpenTelemetry&apos;s <code>enduser.id</code>) get one from these sources, tried in order until one
        gives a value. A credential (an API key, a bearer token) is never stored: its consumer id is a keyed
        hash of it, shown as <code>key_…</code> until someone names the consumer. Identification runs before
        redaction, so a redacted header still identifies.
      </p>
      <QueryView query={current}>{(d) => <IdentificationForm bucketSid={bucketSid} current={d} />}</QueryView>
    </section>
  );
}

function IdentificationForm({ bucketSid, current }: { bucketSid: string; current: ConsumerIdentification }) {
  const a = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const editable = can('buckets:write');
  const [drafts, setDrafts] = useState<Draft[]>(() => current.sources.map(toDraft));
  // A save elsewhere (another tab, settings as code) refills the form.
  useEffect(() => setDrafts(current.sources.map(toDraft)), [current]);
  const save = useMutation({
    mutationFn: (sources: IdentificationSource[]) => consumers.setIdentification(a, bucketSid, sources),
    onSuccess: (saved) => qc.setQueryData(['consumerIdentification', a, bucketSid], saved),
  });
  const sources = drafts.map(toSource);
  // Compared in the form's own shape (field order, defaults), so a saved list reads as unchanged.
  const saved = useMemo(() => JSON.stringify(current.sources.map((x) => toSource(toDraft(x)))), [current]);
  const dirty = JSON.stringify(sources) !== saved;
  const errors = errorsBySource(save.error);
  const change = (key: number, patch: Partial<Draft>) => {
    save.reset();
    setDrafts((list) => list.map((d) => (d.key === key ? { ...d, ...patch } : d)));
  };
  const move = (i: number, by: -1 | 1) => {
    save.reset();
    setDrafts((list) => {
      const next = [...list];
      const [d] = next.splice(i, 1);
      next.splice(i + by, 0, d!);
      return next;
    });
  };
  return (
    <>
      <form
        className="stack identification-form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          save.mutate(sources);
        }}
      >
        <fieldset className="plain" disabled={!editable || save.isPending}>
          <legend className="sr-only">Identification sources, in the order they are tried</legend>
          {drafts.length === 0 ? (
            <p className="muted" data-testid="identification-none">
              No sources: calls get a consumer only from their own records.
            </p>
          ) : (
            <ol className="identification-list">
              {drafts.map((d, i) => (
                <SourceRow
                  key={d.key}
                  draft={d}
                  index={i}
                  count={drafts.length}
                  errors={errors.get(i)}
                  onChange={(patch) => change(d.key, patch)}
                  onMove={(by) => move(i, by)}
                  onRemove={() => {
                    save.reset();
                    setDrafts((list) => list.filter((x) => x.key !== d.key));
                  }}
                />
              ))}
            </ol>
          )}
        </fieldset>
        <FormError error={save.error} shownAt={['sources.*']} />
        {editable ? (
          <div className="actions">
            <button
              type="button"
              className="btn"
              disabled={drafts.length >= MAX_SOURCES || save.isPending}
              title={drafts.length >= MAX_SOURCES ? `At most ${MAX_SOURCES} sources` : undefined}
              onClick={() => {
                save.reset();
                setDrafts((list) => [...list, toDraft({ type: 'header', name: '', hash: true })]);
              }}
            >
              Add a source
            </button>
            {save.isSuccess && !dirty ? (
              <span className="hint ok-text" role="status">
                Saved. The processor applies the sources to new calls within seconds.
              </span>
            ) : null}
            <button type="submit" className="btn btn-primary" disabled={save.isPending || !dirty}>
              {save.isPending ? 'Saving…' : 'Save identification'}
            </button>
          </div>
        ) : (
          <p className="hint">Your role cannot change the identification sources.</p>
        )}
        {current.updatedAt ? (
          <p className="muted small">Last changed {formatDateTime(current.updatedAt)}.</p>
        ) : null}
      </form>
      <IdentificationPreviewForm bucketSid={bucketSid} sources={sources} />
    </>
  );
}

function SourceRow({
  draft: d,
  index,
  count,
  errors,
  onChange,
  onMove,
  onRemove,
}: {
  draft: Draft;
  index: number;
  count: number;
  errors: Map<string, string> | undefined;
  onChange: (patch: Partial<Draft>) => void;
  onMove: (by: -1 | 1) => void;
  onRemove: () => void;
}) {
  const id = `ident-${d.key}`;
  const n = index + 1;
  const kind = KINDS.find((k) => k.kind === d.type)!;
  // Messages about fields this row does not show (an unknown type, a missing field) go under it.
  const shown = new Set(
    d.type === 'header' || d.type === 'query'
      ? ['name']
      : d.type === 'jwtClaim'
        ? ['claim', 'groupClaim', 'header']
        : [],
  );
  const rowErrors = [...(errors ?? [])].filter(([f]) => !shown.has(f)).map(([f, m]) => (f ? `${f} ${m}` : m));
  const input = (field: 'name' | 'claim' | 'groupClaim' | 'header', label: string, placeholder: string) => {
    const error = errors?.get(field);
    return (
      <div className="field">
        <label htmlFor={`${id}-${field}`}>{label}</label>
        <input
          id={`${id}-${field}`}
          value={d[field]}
          placeholder={placeholder}
          maxLength={300}
          spellCheck={false}
          autoComplete="off"
          aria-invalid={error ? true : undefined}
          aria-describedby={error ? `${id}-${field}-error` : undefined}
          onChange={(e) => onChange({ [field]: e.target.value })}
        />
        {error ? (
          <div id={`${id}-${field}-error`} className="field-error" role="alert">
            {error}
          </div>
        ) : null}
      </div>
    );
  };
  return (
    <li className="identification-source" data-testid="identification-source">
      <div className="identification-head">
        <div className="field">
          <label htmlFor={`${id}-type`}>Source {n}</label>
          <select
            id={`${id}-type`}
            value={d.type}
            aria-describedby={`${id}-type-hint`}
            onChange={(e) => {
              const type = e.target.value as Kind;
              onChange({ type, hash: type === 'header' });
            }}
          >
            {KINDS.map((k) => (
              <option key={k.kind} value={k.kind}>
                {k.label}
              </option>
            ))}
          </select>
        </div>
        <div className="row-actions">
          <button
            type="button"
            className="btn btn-small"
            disabled={index === 0}
            aria-label={`Move source ${n} up`}
            onClick={() => onMove(-1)}
          >
            ↑
          </button>
          <button
            type="button"
            className="btn btn-small"
            disabled={index === count - 1}
            aria-label={`Move source ${n} down`}
            onClick={() => onMove(1)}
          >
            ↓
          </button>
          <button type="button" className="btn btn-small btn-danger-ghost" onClick={onRemove}>
            Remove<span className="sr-only"> source {n}</span>
          </button>
        </div>
      </div>
      <div id={`${id}-type-hint`} className="hint">
        {kind.hint}
      </div>
      <div className="identification-fields">
        {d.type === 'header' ? input('name', 'Header name', 'X-API-Key') : null}
        {d.type === 'query' ? input('name', 'Parameter name', 'client_id') : null}
        {d.type === 'jwtClaim' ? (
          <>
            {input('claim', 'Claim', 'sub')}
            {input('groupClaim', 'Group claim (optional)', 'org_id')}
            {input('header', 'Header holding the JWT', 'Authorization')}
          </>
        ) : null}
        {d.type === 'header' || d.type === 'query' ? (
          <label className="check">
            <input type="checkbox" checked={d.hash} onChange={(e) => onChange({ hash: e.target.checked })} />
            <span>Store a keyed hash, not the value (for a credential)</span>
          </label>
        ) : null}
      </div>
      {rowErrors.length ? (
        <div className="field-error" role="alert">
          {rowErrors.join('; ')}
        </div>
      ) : null}
    </li>
  );
}

/**
 * The draft sources (saved or not) applied to one recent request of the bucket by the API: which
 * consumer they give it and from which source, beside the consumer it was stored with.
 */
function IdentificationPreviewForm({
  bucketSid,
  sources,
}: {
  bucketSid: string;
  sources: IdentificationSource[];
}) {
  const a = useAccountSid();
  const { can } = useSession();
  const recent = useQuery({
    queryKey: ['requests', a, bucketSid, 'identification-samples'],
    queryFn: () => requests.list(a, bucketSid, { limit: SAMPLES }),
    enabled: can('requests:read'),
  });
  const [picked, setPicked] = useState('');
  const preview = useMutation({
    mutationFn: (requestSid: string) => consumers.previewIdentification(a, bucketSid, sources, requestSid),
  });
  // A changed draft makes the last answer stale: it is cleared rather than shown for other sources.
  const draftKey = JSON.stringify(sources);
  const { reset } = preview;
  useEffect(() => reset(), [draftKey, reset]);
  if (!can('requests:read')) return null;
  const list = recent.data?.records ?? [];
  const requestSid = picked || list[0]?.sid || '';
  const errors = errorsBySource(preview.error);
  return (
    <form
      className="stack preview-panel identification-preview"
      onSubmit={(e) => {
        e.preventDefault();
        if (requestSid) preview.mutate(requestSid);
      }}
    >
      <h3>Preview</h3>
      {recent.isPending ? null : list.length === 0 ? (
        <p className="muted">
          No request stored in this bucket yet: send one to preview the sources against it.
        </p>
      ) : (
        <>
          <div className="field">
            <label htmlFor="identification-sample">A recent request</label>
            <select id="identification-sample" value={requestSid} onChange={(e) => setPicked(e.target.value)}>
              {list.map((r) => (
                <option key={r.sid} value={r.sid}>
                  {`${r.request.method ?? '?'} ${r.request.path ?? r.request.url ?? ''} · ${formatDateTime(r.createdAt)}`}
                </option>
              ))}
            </select>
          </div>
          <div className="actions">
            <button type="submit" className="btn" disabled={preview.isPending || !requestSid}>
              {preview.isPending ? 'Previewing…' : 'Preview the sources'}
            </button>
          </div>
          {errors.size > 0 ? (
            <div className="field-error" role="alert">
              {[...errors]
                .map(
                  ([row, fields]) =>
                    `Source ${row + 1}: ${[...fields].map(([f, m]) => (f ? `${f} ${m}` : m)).join('; ')}`,
                )
                .join(' · ')}
            </div>
          ) : (
            <FormError error={preview.error} />
          )}
          {preview.data ? <PreviewAnswer answer={preview.data} sources={sources} /> : null}
        </>
      )}
    </form>
  );
}

function PreviewAnswer({
  answer,
  sources,
}: {
  answer: IdentificationPreview;
  sources: IdentificationSource[];
}) {
  const from = answer.source !== null ? sources[answer.source] : undefined;
  const stored = answer.storedConsumer;
  return (
    <div className="preview-result" role="status" data-testid="identification-preview">
      {answer.consumer ? (
        <p>
          Consumer <code>{answer.consumer.id}</code>
          {answer.consumer.group ? (
            <>
              {' '}
              in group <code>{answer.consumer.group}</code>
            </>
          ) : null}
          , from source {(answer.source ?? 0) + 1}
          {from ? ` (${describe(from)})` : ''}.
        </p>
      ) : (
        <p>No source gives this request a consumer.</p>
      )}
      {answer.redacted ? (
        <p className="field-error" data-testid="identification-redacted">
          The value source {(answer.source ?? 0) + 1} read is redacted in this stored request: the processor
          identifies a call before redacting it, so the call itself got another id. Pick a request where it is
          not redacted, or compare with the consumer it was stored with.
        </p>
      ) : null}
      <p className="muted small">
        {stored ? (
          <>
            Stored with consumer <code>{stored.id}</code>
            {stored.name ? ` (${stored.name})` : ''}: its own, or the one the sources in force then gave it (a
            call&apos;s own consumer wins over the sources).
          </>
        ) : (
          'Stored without a consumer.'
        )}
      </p>
    </div>
  );
}
