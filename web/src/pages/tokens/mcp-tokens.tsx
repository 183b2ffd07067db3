import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { mcpTokens, type McpToken } from '../../api/settings';
import { RemoveDialog } from '../../components/dialog';
import { Empty, QueryView } from '../../components/state';
import { useAccountSid, useSession } from '../../lib/session';
import { formatDateTime } from '../../lib/time';
import { NewSecret, lastUsed } from './token-parts';
import { McpConfigSnippet } from './mcp-config';
import { CreateMcpToken } from './mcp-token-form';
import { useBuckets } from '../../api/queries';
import { DataTable } from '../../components/data-table';

export function McpTokensPage() {
  const accountSid = useAccountSid();
  const { can } = useSession();
  const qc = useQueryClient();
  const list = useQuery({ queryKey: ['mcpTokens', accountSid], queryFn: () => mcpTokens.list(accountSid) });
  const bucketList = useBuckets();
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
            <DataTable
              columns={['Name', 'Token', 'Environment', 'Buckets', 'Status', 'Last used', 'Expires', '']}
              wrapClassName="tokens-table"
            >
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
            </DataTable>
          )}
        </QueryView>
      </section>
      {/* While a new token's own configuration is shown above, the generic one would only repeat it. */}
      {created ? null : (
        <section className="panel" aria-labelledby="mcp-config-title">
          <h2 id="mcp-config-title">MCP client configuration</h2>
          <p className="hint">
            Tapline speaks MCP over Streamable HTTP (stateless, JSON answers) at{' '}
            <code>{window.location.origin}/mcp</code>; its tools (search requests, errors, metrics, workflows
            and their executions, events) are listed in docs/events-mcp.md. Replace <code>mcp_…</code> with
            your token (or copy the configuration shown when you create one).
          </p>
          <McpConfigSnippet token="mcp_…" testId="mcp-config" />
        </section>
      )}
      {revoking ? (
        <RevokeMcpToken token={revoking} onClose={() => setRevoking(null)} onDone={refresh} />
      ) : null}
    </div>
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
