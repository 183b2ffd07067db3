import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { api, http, newAccount, testEnv, testPool, waitFor, type TestAccount } from '../helpers/client.js';
import { mcpToken } from '../helpers/scoped-token.js';

type Ev = Record<string, unknown> & { sid: string; name: string };

const open: Client[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});

async function connect(token: string): Promise<Client> {
  const client = new Client({ name: 'tapline-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${testEnv().apiUrl}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  open.push(client);
  return client;
}

interface ToolResult {
  isError?: boolean;
  content: { type: string; text: string }[];
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<ToolResult> {
  return (await client.callTool({ name, arguments: args })) as ToolResult;
}

function payload<T>(res: ToolResult): T {
  expect(res.content[0]?.type).toBe('text');
  return JSON.parse(res.content[0]!.text) as T;
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to fail');
}

async function restEvent(acct: TestAccount, body: Record<string, unknown>): Promise<string> {
  const res = await api(acct.apiToken).post<Ev>(`/v1/accounts/${acct.accountSid}/events`, body);
  expect(res.status).toBe(201);
  return res.body.sid;
}

const mcpPost = (token: string | undefined) =>
  http('POST', `${testEnv().apiUrl}/mcp`, {
    token,
    body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
    headers: { accept: 'application/json, text/event-stream' },
  });

describe('MCP endpoint', () => {
  it('lists its tools and creates an event recorded with source mcp', async () => {
    const acct = await newAccount();
    const { token } = await mcpToken(acct, 'prod01');
    const client = await connect(token);

    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['create_event', 'list_events']));
    const create = tools.find((t) => t.name === 'create_event')!;
    expect(create.inputSchema.required).toEqual(['type', 'name']);
    expect(Object.keys(create.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining([
        'type',
        'name',
        'description',
        'metadata',
        'bucketSids',
        'startedAt',
        'endedAt',
      ]),
    );

    const res = await call(client, 'create_event', {
      type: 'deployment',
      name: 'Deployed v2 from the assistant',
      description: 'rolled out',
      metadata: { sha: 'abc123', canary: true },
    });
    expect(res.isError).toBeFalsy();
    const created = payload<Ev>(res);
    expect(created).toMatchObject({
      type: 'deployment',
      source: 'mcp',
      environmentSids: ['prod01'],
      bucketSids: ['*'],
      metadata: { sha: 'abc123', canary: true },
    });

    const viaRest = await api(acct.apiToken).get<Ev>(`/v1/accounts/${acct.accountSid}/events/${created.sid}`);
    expect(viaRest.status).toBe(200);
    expect(viaRest.body).toMatchObject({
      name: 'Deployed v2 from the assistant',
      source: 'mcp',
      environmentSids: ['prod01'],
    });

    const listed = payload<{ hasMore: boolean; records: Ev[] }>(await call(client, 'list_events', {}));
    expect(listed.records.map((e) => e.sid)).toEqual([created.sid]);

    const invalid = await call(client, 'create_event', { type: 'party', name: '' });
    expect(invalid.isError).toBe(true);
    expect(invalid.content[0]!.text).toContain('type');
    const reversed = await call(client, 'create_event', {
      type: 'incident',
      name: 'x',
      startedAt: '2026-03-01T10:00:00.000Z',
      endedAt: '2026-03-01T09:00:00.000Z',
    });
    expect(reversed.isError).toBe(true);
    expect(reversed.content[0]!.text).toContain('endedAt');
  });

  it("limits both tools to the token's environment and buckets", async () => {
    const acct = await newAccount();
    const b1 = acct.bucketSid;
    const b2 = (await api(acct.apiToken).post<Ev>(`/v1/accounts/${acct.accountSid}/buckets`, { name: 'b2' }))
      .body.sid;
    const t = (m: number) => new Date(Date.parse('2026-03-01T10:00:00.000Z') + m * 60_000).toISOString();
    const E1 = await restEvent(acct, {
      type: 'deployment',
      name: 'E1',
      environmentSids: ['prod01'],
      startedAt: t(1),
    });
    const E2 = await restEvent(acct, {
      type: 'deployment',
      name: 'E2',
      environmentSids: ['stag01'],
      startedAt: t(2),
    });
    const E3 = await restEvent(acct, { type: 'incident', name: 'E3', bucketSids: [b2], startedAt: t(3) });
    const E4 = await restEvent(acct, { type: 'scale', name: 'E4', bucketSids: [b1], startedAt: t(4) });
    const E5 = await restEvent(acct, {
      type: 'incident',
      name: 'E5',
      bucketSids: [b1, b2],
      environmentSids: ['prod01'],
      startedAt: t(5),
      endedAt: t(30),
    });

    const limited = await connect((await mcpToken(acct, 'prod01', [b1])).token);
    const sids = async (client: Client, args: Record<string, unknown>) => {
      const res = await call(client, 'list_events', args);
      expect(res.isError, res.content[0]?.text).toBeFalsy();
      return payload<{ records: Ev[] }>(res).records.map((e) => e.sid);
    };
    expect(await sids(limited, {})).toEqual([E5, E4, E1]);
    expect(await sids(limited, { bucketSid: b1 })).toEqual([E5, E4, E1]);
    expect(await sids(limited, { type: 'incident' })).toEqual([E5]);
    expect(await sids(limited, { startTime: t(10), endTime: t(20) })).toEqual([E5]);
    expect(await sids(limited, { limit: 1 })).toEqual([E5]);
    const outside = await call(limited, 'list_events', { bucketSid: b2 });
    expect(outside.isError).toBe(true);
    expect(outside.content[0]!.text).toContain(b2);

    for (const bucketSids of [[b2], ['*'], [b1, b2]]) {
      const refused = await call(limited, 'create_event', { type: 'custom', name: 'x', bucketSids });
      expect(refused.isError, JSON.stringify(bucketSids)).toBe(true);
    }
    const scoped = payload<Ev>(await call(limited, 'create_event', { type: 'custom', name: 'scoped' }));
    expect(scoped).toMatchObject({ bucketSids: [b1], environmentSids: ['prod01'], source: 'mcp' });

    const allBuckets = await connect((await mcpToken(acct, 'prod01')).token);
    expect(await sids(allBuckets, { bucketSid: b2 })).toEqual([E5, E3, E1]);
    const other = await newAccount();
    const foreign = await call(allBuckets, 'create_event', {
      type: 'custom',
      name: 'x',
      bucketSids: [other.bucketSid],
    });
    expect(foreign.isError).toBe(true);

    const staging = await connect((await mcpToken(acct, 'stag01')).token);
    expect(await sids(staging, {})).toEqual([E4, E3, E2]);
    // Another account's MCP token sees none of these.
    const stranger = await connect((await mcpToken(other, 'prod01')).token);
    expect(await sids(stranger, {})).toEqual([]);
  });

  it('accepts MCP tokens only, and a revoked token fails on the very next call', async () => {
    const acct = await newAccount();
    for (const token of [
      undefined,
      'mcp_doesnotexist000000000000000000000000000',
      acct.apiToken,
      acct.sessionToken,
    ]) {
      const res = await mcpPost(token);
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ success: false, error: { code: 'INVALID_TOKEN' } });
    }
    const err = await rejection(connect(acct.apiToken));
    expect(err).toBeInstanceOf(StreamableHTTPError);
    expect((err as StreamableHTTPError).code).toBe(401);

    const { sid, token } = await mcpToken(acct, 'prod01');
    const client = await connect(token);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('list_events');
    const get = await http('GET', `${testEnv().apiUrl}/mcp`, { token });
    expect(get.status).toBe(405);

    await testPool().query('UPDATE mcp_tokens SET is_revoked = true, revoked_at = now() WHERE sid = $1', [
      sid,
    ]);
    const revoked = await rejection(call(client, 'list_events', {}));
    expect(revoked).toBeInstanceOf(StreamableHTTPError);
    expect((revoked as StreamableHTTPError).code).toBe(401);
    const raw = await mcpPost(token);
    expect(raw.status).toBe(401);
    expect(raw.body).toMatchObject({
      success: false,
      error: { code: 'INVALID_TOKEN', message: 'The MCP token is not valid: unknown, revoked or expired' },
    });
  });

  it('counts an MCP token as used only where it is accepted (lastUsedAt)', async () => {
    const acct = await newAccount();
    const refused = await mcpToken(acct, 'prod01');
    const used = await mcpToken(acct, 'prod01');
    // On the REST API an MCP token is refused…
    const rest = await api(refused.token).get(`/v1/accounts/${acct.accountSid}/buckets`);
    expect(rest.status).toBe(401);
    // …and the one used on /mcp is counted: once its lastUsedAt is written, the refused one's
    // would have been written in the same flush.
    const client = await connect(used.token);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    const tokens = `/v1/accounts/${acct.accountSid}/mcpTokens`;
    const lastUsed = async (sid: string) =>
      (await api(acct.apiToken).get<{ lastUsedAt: string | null }>(`${tokens}/${sid}`)).body.lastUsedAt;
    await waitFor(async () => lastUsed(used.sid), {
      timeoutMs: 15_000,
      what: 'lastUsedAt of the used token',
    });
    expect(await lastUsed(refused.sid)).toBeNull();
  });
});
