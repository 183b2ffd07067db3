import { fieldErrors } from '../../api/client';
import type { IdentificationSource } from '../../api/types';

type Kind = IdentificationSource['type'];

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
export interface Draft {
  key: number;
  type: Kind;
  name: string;
  hash: boolean;
  claim: string;
  groupClaim: string;
  header: string;
}

let nextKey = 1;

/** A stored source as the form edits it, with a key that stays while rows move. */
export function toDraft(s: IdentificationSource): Draft {
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
export function toSource(d: Draft): IdentificationSource {
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

/**
 * The API's validation messages by source and field: `sources.2.name` → row 2, field `name`; a
 * message about a source as a whole (an unknown type) is kept under the row with field `''`.
 */
export function errorsBySource(err: unknown): Map<number, Map<string, string>> {
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

/** One source in the form: its type, its fields, move up or down, remove. */
export function SourceRow({
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
