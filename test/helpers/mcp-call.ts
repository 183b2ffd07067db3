import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { testEnv } from './client.js';

/**
 * One MCP tool call through the official SDK client over Streamable HTTP; the tool's JSON answer.
 * A tool error throws with its text.
 */
export async function callTool(
  token: string,
  name: string,
  args: Record<string, unknown> = {},
): Promise<unknown> {
  const client = new Client({ name: 'tapline-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${testEnv().apiUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  );
  try {
    const res = (await client.callTool({ name, arguments: args })) as {
      isError?: boolean;
      content: { type: string; text: string }[];
    };
    if (res.isError) throw new Error(`${name}: ${res.content[0]?.text}`);
    return JSON.parse(res.content[0]!.text) as unknown;
  } finally {
    await client.close();
  }
}
