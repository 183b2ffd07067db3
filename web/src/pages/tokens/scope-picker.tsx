/**
 * The scope picker of API tokens: a grid of resources × actions with presets. The grid is derived
 * from the scopes the API reports for the signed-in person (`GET /v1/authentication/me` →
 * `scopes`, an administrator's being every scope the API knows), so it follows the API's scope
 * list without a copy of it here; a person can grant only what they hold (the API refuses the
 * rest with 403), so nothing else is offered.
 */

/** Member management is for signed-in administrators only: the API never grants it to a token. */
const SESSION_ONLY_RESOURCES = new Set(['users']);

/** Friendlier names for some resources; any other resource is shown by its name, humanised. */
const LABELS: Record<string, string> = {
  requests: 'Requests (write = send traffic, notes)',
  tokens: 'API tokens',
  mcpTokens: 'MCP tokens',
};
const ACTION_ORDER = ['read', 'write', 'delete'];

export interface ScopeGroup {
  resource: string;
  label: string;
  actions: string[];
}

function humanise(resource: string): string {
  const words = resource.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

const actionRank = (a: string) => {
  const i = ACTION_ORDER.indexOf(a);
  return i === -1 ? ACTION_ORDER.length : i;
};

/** The scopes a token may be given, from the person's own scopes: `resource:action` only. */
export function grantableScopes(held: Iterable<string>): string[] {
  return [...new Set(held)].filter((s) => {
    const [resource, action, ...rest] = s.split(':');
    return resource && action && rest.length === 0 && !SESSION_ONLY_RESOURCES.has(resource);
  });
}

/** Resources in first-seen order, each with its actions (read, write, delete first). */
export function scopeGroups(scopes: readonly string[]): ScopeGroup[] {
  const groups = new Map<string, ScopeGroup>();
  for (const s of scopes) {
    const [resource = '', action = ''] = s.split(':');
    let g = groups.get(resource);
    if (!g) {
      g = { resource, label: LABELS[resource] ?? humanise(resource), actions: [] };
      groups.set(resource, g);
    }
    if (!g.actions.includes(action)) g.actions.push(action);
  }
  for (const g of groups.values())
    g.actions.sort((x, y) => actionRank(x) - actionRank(y) || x.localeCompare(y));
  return [...groups.values()];
}

export interface Preset {
  id: string;
  label: string;
  scopes: string[];
}

/** Ingest only (send traffic), read only (every `:read`), everything (every grantable scope). */
export function presets(available: readonly string[]): Preset[] {
  return [
    { id: 'ingest', label: 'Ingest only', scopes: available.filter((s) => s === 'requests:write') },
    { id: 'read', label: 'Read only', scopes: available.filter((s) => s.endsWith(':read')) },
    { id: 'all', label: 'Everything', scopes: [...available] },
  ];
}

const sameSet = (a: readonly string[], b: ReadonlySet<string>) =>
  a.length === b.size && a.every((s) => b.has(s));

/**
 * A short human summary of a token's scopes. `role` is the API's own reading of them
 * (administrator = every scope, ingest = only `requests:write`).
 */
export function scopeSummary(scopes: readonly string[], role?: string): string {
  if (role === 'administrator') return 'Everything';
  if (role === 'ingest' || (scopes.length === 1 && scopes[0] === 'requests:write')) return 'Ingest only';
  if (scopes.length > 0 && scopes.every((s) => s.endsWith(':read')))
    return `Read only: ${scopeGroups(scopes)
      .map((g) => g.resource)
      .join(', ')}`;
  return scopeGroups(scopes)
    .map((g) => `${g.resource} ${g.actions.join('/')}`)
    .join(' · ');
}

export function ScopePicker({
  value,
  onChange,
  available,
  error,
}: {
  value: readonly string[];
  onChange: (next: string[]) => void;
  /** the scopes that may be granted (`grantableScopes` of the person's own) */
  available: readonly string[];
  error?: string;
}) {
  const set = new Set(value);
  const groups = scopeGroups(available);
  const columns = scopeGroups(available.map((s) => `x:${s.split(':')[1] ?? ''}`))[0]?.actions ?? [];
  const toggle = (scope: string, on: boolean) => {
    const next = new Set(set);
    if (on) next.add(scope);
    else next.delete(scope);
    onChange(available.filter((s) => next.has(s)));
  };
  return (
    <fieldset className="scope-picker" aria-describedby={error ? 'scopes-error' : undefined}>
      <legend>Scopes</legend>
      <div className="scope-presets" role="group" aria-label="Presets">
        <span className="muted small">Presets:</span>
        {presets(available).map((p) => (
          <button
            key={p.id}
            type="button"
            className="btn btn-small"
            disabled={p.scopes.length === 0}
            aria-pressed={p.scopes.length > 0 && sameSet(p.scopes, set)}
            onClick={() => onChange(p.scopes)}
          >
            {p.label}
          </button>
        ))}
        <button type="button" className="btn btn-small btn-ghost" onClick={() => onChange([])}>
          Clear
        </button>
      </div>
      <div className="table-wrap">
        <table className="table scope-grid">
          <thead>
            <tr>
              <th scope="col">Resource</th>
              {columns.map((a) => (
                <th key={a} scope="col" className="center">
                  {a}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {groups.map((g) => (
              <tr key={g.resource}>
                <th scope="row">{g.label}</th>
                {columns.map((a) => {
                  const scope = `${g.resource}:${a}`;
                  if (!g.actions.includes(a))
                    return (
                      <td key={a} className="center muted" title={`${scope} cannot be granted`}>
                        –
                      </td>
                    );
                  return (
                    <td key={a} className="center">
                      <input
                        type="checkbox"
                        aria-label={scope}
                        title={scope}
                        checked={set.has(scope)}
                        onChange={(e) => toggle(scope, e.target.checked)}
                      />
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div className="hint">
        {value.length === 0
          ? 'No scope selected yet.'
          : `${value.length} scope${value.length === 1 ? '' : 's'}: ${scopeSummary(value)}`}
        {' · '}
        Only scopes you hold are offered. Writing workflows that send data out (webhook, email, chat,
        automation) needs requests:read too.
      </div>
      {error ? (
        <div id="scopes-error" className="field-error" role="alert">
          {error}
        </div>
      ) : null}
    </fieldset>
  );
}
