import { useState, type ReactNode } from 'react';
import { isRedacted } from '../../lib/redaction';

/** Redacted values are shown as such: the processor removed them before storage. */
export function RedactedValue({ value }: { value: string }) {
  return (
    <span className="redacted" data-testid="redacted" title="Removed by a redaction rule before storage">
      <span className="redacted-tag">redacted</span>
      {value}
    </span>
  );
}

export function Scalar({ value }: { value: unknown }) {
  if (value === null) return <span className="json-null">null</span>;
  if (typeof value === 'string')
    return isRedacted(value) ? (
      <RedactedValue value={value} />
    ) : (
      <span className="json-string">&quot;{value}&quot;</span>
    );
  if (typeof value === 'number') return <span className="json-number">{value}</span>;
  if (typeof value === 'boolean') return <span className="json-bool">{String(value)}</span>;
  return <span>{String(value)}</span>;
}

/** A collapsible JSON tree (objects and arrays fold; keyboard reachable through their buttons). */
export function JsonView({ value, name, depth = 0 }: { value: unknown; name?: ReactNode; depth?: number }) {
  const [open, setOpen] = useState(depth < 2);
  const isObj = value !== null && typeof value === 'object';
  const label = name !== undefined ? <span className="json-key">{name}: </span> : null;
  if (!isObj)
    return (
      <div className="json-row">
        {label}
        <Scalar value={value} />
      </div>
    );
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  const [o, c] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  return (
    <div className="json-row">
      <button type="button" className="json-toggle" aria-expanded={open} onClick={() => setOpen((x) => !x)}>
        {open ? '▾' : '▸'}
      </button>
      {label}
      {o}
      {open ? (
        <div className="json-children">
          {entries.map(([k, v]) => (
            <JsonView key={k} name={k} value={v} depth={depth + 1} />
          ))}
        </div>
      ) : (
        <span className="muted"> {entries.length} items </span>
      )}
      {c}
    </div>
  );
}

const LIMIT = 20_000;

/** A captured body: JSON (or a string holding JSON) as a tree, other text as text, long ones cut. */
export function BodyView({ body }: { body: unknown }) {
  const [all, setAll] = useState(false);
  if (body === undefined || body === null || body === '') return <p className="muted">No body</p>;
  let parsed: unknown = body;
  if (typeof body === 'string' && /^\s*[[{]/.test(body)) {
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = body;
    }
  }
  if (typeof parsed === 'string') {
    const cut = !all && parsed.length > LIMIT;
    return (
      <div>
        <pre className="body-text">
          {isRedacted(parsed) ? <RedactedValue value={parsed} /> : cut ? parsed.slice(0, LIMIT) : parsed}
        </pre>
        {cut ? (
          <button type="button" className="btn btn-small" onClick={() => setAll(true)}>
            Show all {parsed.length.toLocaleString()} characters
          </button>
        ) : null}
      </div>
    );
  }
  const size = JSON.stringify(parsed).length;
  if (!all && size > LIMIT * 5)
    return (
      <div>
        <p className="muted">Large body ({size.toLocaleString()} characters).</p>
        <button type="button" className="btn btn-small" onClick={() => setAll(true)}>
          Show it
        </button>
      </div>
    );
  return (
    <div className="json-view">
      <JsonView value={parsed} />
    </div>
  );
}

/** Headers (or query parameters) as a two-column table, redacted values marked. */
export function KeyValueTable({
  values,
  label,
}: {
  values: Record<string, unknown> | null | undefined;
  label: string;
}) {
  const entries = Object.entries(values ?? {});
  if (entries.length === 0) return <p className="muted">No {label.toLowerCase()}</p>;
  return (
    <table className="table kv" aria-label={label}>
      <tbody>
        {entries.map(([k, v]) => (
          <tr key={k}>
            <th scope="row" className="mono">
              {k}
            </th>
            <td className="mono break">
              {(Array.isArray(v) ? v : [v]).map((x, i) => (
                <div key={i}>
                  {typeof x === 'string' && isRedacted(x) ? <RedactedValue value={x} /> : String(x)}
                </div>
              ))}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
