import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent, type ReactNode } from 'react';
import { fieldErrors } from '../../api/client';
import { buckets } from '../../api/resources';
import { apiTokens, mcpTokens, type ApiToken, type ApiTokenCreate, type McpToken } from '../../api/settings';
import { CopyButton } from '../../components/copy-button';
import { RemoveDialog } from '../../components/dialog';
import { Field, FormError } from '../../components/form';
import { ScopePicker, grantableScopes, scopeSummary } from './scope-picker';
import { Empty, QueryView } from '../../components/state';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime, relative } from '../../lib/time';
import { useQueryState } from '../../lib/url-state';

/** `<input type="date">` value → the end of that day in the browser's zone, as ISO 8601. */
function endOfDay(date: string): string {
  return new Date(`${date}T23:59:59`).toISOString();
}

function lastUsed(iso: string | null | undefined) {
  return iso ? (
    <span title={formatDateTime(iso)}>{relative(iso)}</span>
  ) : (
    <span className="muted">never</span>
  );
}

/** The value shown once after a create, with the one warning that matters. */
function NewSecret({ value, onDone, children }: { value: string; onDone: () => void; children?: ReactNode }) {
  return (
    <div className="secret-box secret-new" role="status">
      <strong>Copy this token now: you will not see it again.</strong>
      <div className="secret-value">
        <code data-testid="new-token-value" className="break">
          {value}
        </code>
        <CopyButton text={value} label="Copy token" />
      </div>
      {children}
      <div>
        <button type="button" className="btn btn-small" onClick={onDone}>
          I have copied it
        </button>
      </div>
    </div>
  );
}

// ───────────────────────────── API tokens ─────────────────────────────

interface Draft {
  name: string;
  description: string;
  scopes: string[];
  expiry: 'never' | 'date';
  expiresOn: string;
  environment: 'live' | 'test';
  environmentSid: string;
}

const EMPTY_DRAFT: Draft = {
  name: '',
  description: '',
  scopes: [],
  expiry: 'never',
  expiresOn: '',
  environment: 'live',
  environmentSid: '',
};

/** API tokens: list, create (scope grid and presets, value shown once), (de)activate, delete. */
export function TokensPage() {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const list = useQuery({ queryKey: ['apiTokens', accountSid], queryFn: () => apiTokens.list(accountSid) });
  const [draft, setDraft] = useState<Draft | null>(null);
  const [created, setCreated] = useState<ApiToken | null>(null);
  const [deleting, setDeleting] = useState<ApiToken | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: ['apiTokens', accountSid] });

  const toggle = useMutation({
    mutationFn: (t: ApiToken) => apiTokens.update(accountSid, t.sid, { name: t.name, isActive: !t.isActive }),
    onSuccess: refresh,
  });
  const replace = (t: ApiToken) => {
    setCreated(null);
    setDraft({ ...EMPTY_DRAFT, name: t.name, description: t.description, scopes: [...t.scopes] });
    window.scrollTo({ top: 0 });
  };

  return (
    <div className="page">
      <div className="page-head">
        <h1>API tokens</h1>
        {can('tokens:write') && !draft ? (
          <button
            type="button"
            className="btn btn-primary"
            onClick={() => {
              setCreated(null);
              setDraft(EMPTY_DRAFT);
            }}
          >
            Create API token
          </button>
        ) : null}
      </div>
      <p className="hint intro">
        Tokens authenticate scripts, CI jobs and SDKs against <code>/v1</code> and the ingest listener. A
        token's scopes, value and expiry never change: to change them, create a replacement and delete the old
        one.
      </p>
      {draft ? (
        <CreateApiToken
          initial={draft}
          onCancel={() => setDraft(null)}
          onCreated={async (t) => {
            setDraft(null);
            setCreated(t);
            await refresh();
          }}
        />
      ) : null}
      {created?.token ? (
        <NewSecret value={created.token} onDone={() => setCreated(null)}>
          <p className="small">
            “{created.name}” ({scopeSummary(created.scopes, created.role)}). Send it as{' '}
            <code>Authorization: Bearer …</code>.
          </p>
        </NewSecret>
      ) : null}
      <section className="panel" aria-label="API tokens">
        {toggle.error ? <FormError error={toggle.error} /> : null}
        <QueryView
          query={list}
          isEmpty={(d) => d.records.length === 0}
          empty={
            <Empty title="No API token yet">
              Create one to send traffic from an SDK or read the API from a script.
            </Empty>
          }
        >
          {(d) => (
            <div className="table-wrap tokens-table">
              <table className="table">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Token</th>
                    <th scope="col">Scopes</th>
                    <th scope="col">Role</th>
                    <th scope="col">Status</th>
                    <th scope="col">Last used</th>
                    <th scope="col">Expires</th>
                    <th scope="col">
                      <span className="sr-only">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.records.map((t) => {
                    const expired = t.expiresAt !== null && Date.parse(t.expiresAt) < Date.now();
                    return (
                      <tr key={t.sid}>
                        <td>
                          <strong>{t.name}</strong>
                          {t.description ? <div className="muted small">{t.description}</div> : null}
                          {t.environmentSid ? (
                            <div className="muted small">environment {t.environmentSid}</div>
                          ) : null}
                        </td>
                        <td className="mono small nowrap" title={`Record ${t.sid}; the value was shown once`}>
                          at_…••••
                        </td>
                        <td className="small" title={t.scopes.join(', ')}>
                          {scopeSummary(t.scopes, t.role)}
                        </td>
                        <td>
                          <span className="badge">{t.role}</span>
                        </td>
                        <td>
                          {expired ? (
                            <span className="badge badge-off">expired</span>
                          ) : t.isActive ? (
                            <span className="badge badge-ok">active</span>
                          ) : (
                            <span className="badge badge-pending">inactive</span>
                          )}
                        </td>
                        <td className="small nowrap">{lastUsed(t.lastUsedAt)}</td>
                        <td className="small nowrap">
                          {t.expiresAt ? formatDateTime(t.expiresAt) : 'never'}
                        </td>
                        <td>
                          <div className="row-actions">
                            {can('tokens:write') ? (
                              <>
                                <button
                                  type="button"
                                  className="btn btn-small"
                                  disabled={toggle.isPending}
                                  onClick={() => toggle.mutate(t)}
                                  aria-label={`${t.isActive ? 'Deactivate' : 'Activate'} ${t.name}`}
                                >
                                  {t.isActive ? 'Deactivate' : 'Activate'}
                                </button>
                                <button
                                  type="button"
                                  className="btn btn-small"
                                  title="Scopes and expiry cannot be changed: create a new token with the same scopes"
                                  onClick={() => replace(t)}
                                  aria-label={`Replace ${t.name}`}
                                >
                                  Replace
                                </button>
                              </>
                            ) : null}
                            {can('tokens:delete') ? (
                              <button
                                type="button"
                                className="btn btn-small btn-danger-ghost"
                                onClick={() => setDeleting(t)}
                                aria-label={`Delete ${t.name}`}
                              >
                                Delete
                              </button>
                            ) : null}
                          </div>
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )}
        </QueryView>
      </section>
      {deleting ? (
        <DeleteApiToken token={deleting} onClose={() => setDeleting(null)} onDone={refresh} />
      ) : null}
    </div>
  );
}

function CreateApiToken({
  initial,
  onCancel,
  onCreated,
}: {
  initial: Draft;
  onCancel: () => void;
  onCreated: (t: ApiToken) => Promise<void>;
}) {
  const accountSid = useAccountSid();
  const { session } = useSession();
  const available = grantableScopes(session.scopes);
  const [d, setD] = useState<Draft>(initial);
  const set = (patch: Partial<Draft>) => setD((x) => ({ ...x, ...patch }));
  const create = useMutation({
    mutationFn: () => {
      const body: ApiTokenCreate = {
        name: d.name,
        description: d.description,
        scopes: d.scopes,
        expiresAt: d.expiry === 'date' && d.expiresOn ? endOfDay(d.expiresOn) : null,
        environment: d.environment,
        environmentSid: d.environmentSid || null,
      };
      return apiTokens.create(accountSid, body);
    },
    onSuccess: onCreated,
  });
  const errs = fieldErrors(create.error);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  const today = new Date().toISOString().slice(0, 10);
  return (
    <section className="panel" aria-labelledby="new-token-title">
      <h2 id="new-token-title">New API token</h2>
      {initial.name ? (
        <p className="hint">
          A replacement with the same scopes: pick a new expiry if you like, then delete the old token once
          every client uses the new one.
        </p>
      ) : null}
      <form className="stack" onSubmit={submit} noValidate>
        <div className="grid-2">
          <Field
            id="token-name"
            label="Name"
            required
            maxLength={200}
            placeholder="e.g. checkout-service production"
            value={d.name}
            error={errs.name}
            onChange={(e) => set({ name: e.target.value })}
          />
          <div className="field">
            <label htmlFor="token-environment">Environment</label>
            <select
              id="token-environment"
              value={d.environment}
              onChange={(e) => set({ environment: e.target.value as Draft['environment'] })}
            >
              <option value="live">live (at_live_…)</option>
              <option value="test">test (at_test_…)</option>
            </select>
            <div className="hint">
              Only the value's prefix differs, so test tokens are easy to tell apart.
            </div>
          </div>
        </div>
        <div className="field">
          <label htmlFor="token-description">Description (optional)</label>
          <textarea
            id="token-description"
            rows={2}
            maxLength={2000}
            value={d.description}
            aria-invalid={errs.description ? true : undefined}
            aria-describedby={errs.description ? 'token-description-error' : undefined}
            onChange={(e) => set({ description: e.target.value })}
          />
          {errs.description ? (
            <div id="token-description-error" className="field-error" role="alert">
              {errs.description}
            </div>
          ) : null}
        </div>
        <ScopePicker
          value={d.scopes}
          onChange={(scopes) => set({ scopes })}
          available={available}
          error={errs.scopes}
        />
        <div className="grid-2">
          <fieldset className="field expiry">
            <legend>Expires</legend>
            <label className="check">
              <input
                type="radio"
                name="token-expiry"
                checked={d.expiry === 'never'}
                onChange={() => set({ expiry: 'never' })}
              />
              Never
            </label>
            <label className="check">
              <input
                type="radio"
                name="token-expiry"
                checked={d.expiry === 'date'}
                onChange={() => set({ expiry: 'date', expiresOn: d.expiresOn || today })}
              />
              At the end of
              <input
                type="date"
                aria-label="Expiry date"
                min={today}
                value={d.expiresOn}
                disabled={d.expiry !== 'date'}
                aria-invalid={errs.expiresAt ? true : undefined}
                onChange={(e) => set({ expiresOn: e.target.value })}
              />
            </label>
            {errs.expiresAt ? (
              <div className="field-error" role="alert">
                {errs.expiresAt}
              </div>
            ) : (
              <div className="hint">Cannot be changed later.</div>
            )}
          </fieldset>
          <Field
            id="token-environment-sid"
            label="Environment sid label (optional)"
            maxLength={6}
            placeholder="e.g. prod01"
            hint="6 lowercase letters or digits, shown on the token; it does not restrict it."
            value={d.environmentSid}
            error={errs.environmentSid}
            onChange={(e) => set({ environmentSid: e.target.value.trim() })}
          />
        </div>
        <FormError
          error={create.error}
          shownAt={['name', 'description', 'scopes', 'expiresAt', 'environmentSid']}
        />
        <div className="actions">
          <button type="button" className="btn" onClick={onCancel}>
            Cancel
          </button>
          <button
            type="submit"
            className="btn btn-primary"
            disabled={create.isPending || !d.name.trim() || d.scopes.length === 0}
          >
            {create.isPending ? 'Creating…' : 'Create token'}
          </button>
        </div>
      </form>
    </section>
  );
}

function DeleteApiToken({
  token,
  onClose,
  onDone,
}: {
  token: ApiToken;
  onClose: () => void;
  onDone: () => Promise<unknown>;
}) {
  const accountSid = useAccountSid();
  return (
    <RemoveDialog
      title={`Delete “${token.name}”?`}
      confirmLabel="Delete token"
      remove={() => apiTokens.remove(accountSid, token.sid)}
      onDone={onDone}
      onClose={onClose}
    >
      <p>
        Every client using this token is refused (401) from its next request. The token is removed for good;
        to stop it only for a while, deactivate it instead.
      </p>
    </RemoveDialog>
  );
}

// ───────────────────────────── MCP tokens ─────────────────────────────

/**
 * The MCP client configuration for Tapline's Streamable HTTP endpoint (docs/events-mcp.md): the
 * shape Claude Code, Cursor, VS Code and other Streamable HTTP clients read.
 */
export function mcpConfig(token: string): string {
  return JSON.stringify(
    {
      mcpServers: {
        tapline: {
          type: 'http',
          url: `${window.location.origin}/mcp`,
          headers: { Authorization: `Bearer ${token}` },
        },
      },
    },
    null,
    2,
  );
}

/**
 * Claude Desktop's `claude_desktop_config.json` starts local (stdio) servers only: the
 * `mcp-remote` bridge connects it to the HTTP endpoint. The token sits in `env` so the header
 * argument has no space in it (some platforms split arguments on spaces).
 */
export function mcpConfigClaudeDesktop(token: string): string {
  return JSON.stringify(
    {
      mcpServers: {
        tapline: {
          command: 'npx',
          args: [
            '-y',
            'mcp-remote',
            `${window.location.origin}/mcp`,
            '--header',
            'Authorization:${TAPLINE_AUTH}',
          ],
          env: { TAPLINE_AUTH: `Bearer ${token}` },
        },
      },
    },
    null,
    2,
  );
}

const MCP_CLIENTS = [
  { id: 'http', label: 'Streamable HTTP clients (Claude Code, Cursor, VS Code…)', config: mcpConfig },
  {
    id: 'claude-desktop',
    label: 'Claude Desktop (claude_desktop_config.json)',
    config: mcpConfigClaudeDesktop,
  },
] as const;

/** The configuration snippet for the client chosen in the URL (`client`), with a copy button. */
function McpConfigSnippet({ token, testId }: { token: string; testId: string }) {
  const { get, set } = useQueryState();
  const client = MCP_CLIENTS.find((c) => c.id === get('client')) ?? MCP_CLIENTS[0];
  const text = client.config(token);
  return (
    <div className="stack">
      <label className="mcp-client">
        <span className="small">Client</span>
        <select
          value={client.id}
          onChange={(e) => set({ client: e.target.value === 'http' ? null : e.target.value })}
        >
          {MCP_CLIENTS.map((c) => (
            <option key={c.id} value={c.id}>
              {c.label}
            </option>
          ))}
        </select>
      </label>
      <div className="snippet">
        <pre>
          <code data-testid={testId}>{text}</code>
        </pre>
        <CopyButton text={text} label="Copy configuration" />
      </div>
    </div>
  );
}

/** MCP tokens: list (masked), create (environment, buckets), value shown once, revoke, client config. */
export function McpTokensPage() {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const list = useQuery({ queryKey: ['mcpTokens', accountSid], queryFn: () => mcpTokens.list(accountSid) });
  const bucketList = useQuery({ queryKey: ['buckets', accountSid], queryFn: () => buckets.list(accountSid) });
  const bucketName = (sid: string) => bucketList.data?.records.find((b) => b.sid === sid)?.name ?? sid;
  const [creating, setCreating] = useState(false);
  const [created, setCreated] = useState<McpToken | null>(null);
  const [revoking, setRevoking] = useState<McpToken | null>(null);
  const refresh = () => qc.invalidateQueries({ queryKey: ['mcpTokens', accountSid] });
  const mayCreate = can('mcpTokens:write') && can('events:read') && can('events:write');
  return (
    <div className="page">
      <div className="page-head">
        <h1>MCP tokens</h1>
        {mayCreate && !creating ? (
          <button
            type="button"
            className="btn btn-primary"
            onClick={() => {
              setCreated(null);
              setCreating(true);
            }}
          >
            Create MCP token
          </button>
        ) : null}
      </div>
      <p className="hint intro">
        MCP tokens let an AI assistant read traffic, errors, metrics and workflows and create event markers
        through <code>/mcp</code>, limited to one environment and, optionally, some buckets. They work nowhere
        else.
      </p>
      {creating ? (
        <CreateMcpToken
          onCancel={() => setCreating(false)}
          onCreated={async (t) => {
            setCreating(false);
            setCreated(t);
            await refresh();
          }}
        />
      ) : null}
      {created ? (
        <NewSecret value={created.token} onDone={() => setCreated(null)}>
          <p className="small">Your MCP client's configuration, with the token filled in:</p>
          <McpConfigSnippet token={created.token} testId="new-mcp-config" />
        </NewSecret>
      ) : null}
      <section className="panel" aria-label="MCP tokens">
        <QueryView
          query={list}
          isEmpty={(d) => d.records.length === 0}
          empty={
            <Empty title="No MCP token yet">
              Create one to let an MCP client mark deployments and incidents.
            </Empty>
          }
        >
          {(d) => (
            <div className="table-wrap tokens-table">
              <table className="table">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Token</th>
                    <th scope="col">Environment</th>
                    <th scope="col">Buckets</th>
                    <th scope="col">Status</th>
                    <th scope="col">Last used</th>
                    <th scope="col">Expires</th>
                    <th scope="col">
                      <span className="sr-only">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.records.map((t) => (
                    <tr key={t.sid}>
                      <td>
                        <strong>{t.name}</strong>
                        <div className="muted small">created {formatDateTime(t.createdAt)}</div>
                      </td>
                      <td className="mono small nowrap">{t.token}</td>
                      <td className="mono">{t.environmentSid}</td>
                      <td className="small">
                        {t.bucketSids.length === 0 ? 'all buckets' : t.bucketSids.map(bucketName).join(', ')}
                      </td>
                      <td>
                        {t.isRevoked ? (
                          <span
                            className="badge badge-off"
                            title={t.revokedAt ? formatDateTime(t.revokedAt) : ''}
                          >
                            revoked
                          </span>
                        ) : t.expiresAt !== null && Date.parse(t.expiresAt) < Date.now() ? (
                          <span className="badge badge-off">expired</span>
                        ) : (
                          <span className="badge badge-ok">active</span>
                        )}
                      </td>
                      <td className="small nowrap">{lastUsed(t.lastUsedAt)}</td>
                      <td className="small nowrap">{t.expiresAt ? formatDateTime(t.expiresAt) : 'never'}</td>
                      <td>
                        {can('mcpTokens:delete') && !t.isRevoked ? (
                          <div className="row-actions">
                            <button
                              type="button"
                              className="btn btn-small btn-danger-ghost"
                              onClick={() => setRevoking(t)}
                              aria-label={`Revoke ${t.name}`}
                            >
                              Revoke
                            </button>
                          </div>
                        ) : null}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </QueryView>
      </section>
      <section className="panel" aria-labelledby="mcp-config-title">
        <h2 id="mcp-config-title">MCP client configuration</h2>
        <p className="hint">
          Tapline speaks MCP over Streamable HTTP (stateless, JSON answers) at{' '}
          <code>{window.location.origin}/mcp</code>; its tools (search requests, errors, metrics, workflows
          and their executions, events) are listed in docs/events-mcp.md. Replace <code>mcp_…</code> with your
          token (or copy the configuration shown when you create one).
        </p>
        <McpConfigSnippet token="mcp_…" testId="mcp-config" />
      </section>
      {revoking ? (
        <RevokeMcpToken token={revoking} onClose={() => setRevoking(null)} onDone={refresh} />
      ) : null}
    </div>
  );
}

function CreateMcpToken({
  onCancel,
  onCreated,
}: {
  onCancel: () => void;
  onCreated: (t: McpToken) => Promise<void>;
}) {
  const accountSid = useAccountSid();
  const { get } = useQueryState();
  const bucketList = useQuery({ queryKey: ['buckets', accountSid], queryFn: () => buckets.list(accountSid) });
  const [name, setName] = useState('');
  const [environmentSid, setEnvironmentSid] = useState(get('env') ?? '');
  const [allBuckets, setAllBuckets] = useState(true);
  const [picked, setPicked] = useState<string[]>([]);
  const [expiresOn, setExpiresOn] = useState('');
  const today = new Date().toISOString().slice(0, 10);
  const create = useMutation({
    mutationFn: () =>
      mcpTokens.create(accountSid, {
        name,
        environmentSid,
        bucketSids: allBuckets ? [] : picked,
        expiresAt: expiresOn ? endOfDay(expiresOn) : null,
      }),
    onSuccess: onCreated,
  });
  const errs = fieldErrors(create.error);
  const bucketErrors = Object.entries(errs)
    .filter(([k]) => k.startsWith('bucketSids'))
    .map(([, v]) => v);
  return (
    <section className="panel" aria-labelledby="new-mcp-title">
      <h2 id="new-mcp-title">New MCP token</h2>
      <form
        className="stack"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          create.mutate();
        }}
      >
        <div className="grid-2">
          <Field
            id="mcp-name"
            label="Name"
            required
            maxLength={200}
            placeholder="e.g. Claude on my laptop"
            value={name}
            error={errs.name}
            onChange={(e) => setName(e.target.value)}
          />
          <Field
            id="mcp-environment"
            label="Environment sid"
            required
            maxLength={6}
            placeholder="e.g. prod01"
            hint="6 lowercase letters or digits; the token sees and creates events of this environment only. It cannot be changed later."
            value={environmentSid}
            error={errs.environmentSid}
            onChange={(e) => setEnvironmentSid(e.target.value.trim())}
          />
        </div>
        <fieldset className="field">
          <legend>Buckets</legend>
          <label className="check">
            <input
              type="radio"
              name="mcp-buckets"
              checked={allBuckets}
              onChange={() => setAllBuckets(true)}
            />
            Every bucket of the environment
          </label>
          <label className="check">
            <input
              type="radio"
              name="mcp-buckets"
              checked={!allBuckets}
              onChange={() => setAllBuckets(false)}
            />
            Only these buckets:
          </label>
          {!allBuckets ? (
            <div className="bucket-checks">
              {(bucketList.data?.records ?? []).map((b) => (
                <label key={b.sid} className="check">
                  <input
                    type="checkbox"
                    checked={picked.includes(b.sid)}
                    onChange={(e) =>
                      setPicked((p) => (e.target.checked ? [...p, b.sid] : p.filter((x) => x !== b.sid)))
                    }
                  />
                  {b.name}
                </label>
              ))}
              {bucketList.data?.records.length === 0 ? <span className="muted">No bucket yet.</span> : null}
            </div>
          ) : null}
          {bucketErrors.map((m) => (
            <div key={m} className="field-error" role="alert">
              {m}
            </div>
          ))}
        </fieldset>
        <div className="field">
          <label htmlFor="mcp-expires">Expires at the end of (optional)</label>
          <input
            id="mcp-expires"
            type="date"
            min={today}
            value={expiresOn}
            aria-invalid={errs.expiresAt ? true : undefined}
            aria-describedby="mcp-expires-hint"
            onChange={(e) => setExpiresOn(e.target.value)}
          />
          {errs.expiresAt ? (
            <div className="field-error" role="alert">
              {errs.expiresAt}
            </div>
          ) : (
            <div id="mcp-expires-hint" className="hint">
              Empty = never. An expired token is refused like a revoked one.
            </div>
          )}
        </div>
        <FormError error={create.error} shownAt={['name', 'environmentSid', 'bucketSids.*', 'expiresAt']} />
        <div className="actions">
          <button type="button" className="btn" onClick={onCancel}>
            Cancel
          </button>
          <button
            type="submit"
            className="btn btn-primary"
            disabled={
              create.isPending || !name.trim() || !environmentSid || (!allBuckets && picked.length === 0)
            }
          >
            {create.isPending ? 'Creating…' : 'Create token'}
          </button>
        </div>
      </form>
    </section>
  );
}

function RevokeMcpToken({
  token,
  onClose,
  onDone,
}: {
  token: McpToken;
  onClose: () => void;
  onDone: () => Promise<unknown>;
}) {
  const accountSid = useAccountSid();
  return (
    <RemoveDialog
      title={`Revoke “${token.name}”?`}
      confirmLabel="Revoke token"
      remove={() => mcpTokens.remove(accountSid, token.sid)}
      onDone={onDone}
      onClose={onClose}
    >
      <p>
        MCP clients using it are refused (401) from their next call. It stays in the list, marked revoked; it
        cannot be reactivated.
      </p>
    </RemoveDialog>
  );
}
