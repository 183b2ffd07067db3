import { CopyButton } from '../../components/copy-button';
import { useQueryState } from '../../lib/url-state';

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
export function McpConfigSnippet({ token, testId }: { token: string; testId: string }) {
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
