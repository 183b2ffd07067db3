import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_RATE_LIMITED } from '../../services/api/mcp/mcp.route.js';
import { api, http, ingest, makeRecord, newAccount, testEnv, testPool } from '../helpers/client.js';
import { mcpToken, scopedToken } from '../helpers/scoped-token.js';
import { freePort, startService, type ServiceProcess } from '../helpers/service-process.js';

/**
 * Issue 14 point 12, unbounded work (docs/security.md "Limits"): lists stop at page × limit =
 * 10,000 rows; the ingest listener counts calls per token and per bucket, /mcp per MCP token,
 * and answers 429 with Retry-After past the limit. The per-minute limits are checked on a second
 * service (ingest and API roles only, so it consumes nothing) sharing the run's Kafka and
 * Postgres, started with small limits.
 */
const LIMITS = {
  INGEST_RATE_LIMIT_TOKEN: 5,
  INGEST_RATE_LIMIT_BUCKET: 8,
  MCP_RATE_LIMIT: 3,
  AUTH_LOOKUPS_PER_SECOND: 10,
};
let svc: ServiceProcess;
let dataDir: string;

beforeAll(async () => {
  const env = testEnv();
  dataDir = path.join(env.dataDir, `limits-${process.pid}`);
  fs.mkdirSync(dataDir, { recursive: true });
  svc = await startService(
    {
      ROLES: 'ingest,api',
      INGEST_PROCESS: 'inline',
      PORT: String(await freePort()),
      INGEST_PORT: String(await freePort()),
      DATA_DIR: dataDir,
      KAFKA_BROKERS: env.kafkaBrokers.join(','),
      DATABASE_URL: env.databaseUrl,
      ...Object.fromEntries(Object.entries(LIMITS).map(([k, v]) => [k, String(v)])),
    },
    path.join(dataDir, 'service.log'),
  );
}, 180_000);

afterAll(async () => {
  await svc?.stop();
});

function ingestTo(bucketSid: string, token: string) {
  return http<{
    accepted: number;
    success?: boolean;
    error?: { code: string; details: Record<string, unknown> };
  }>('POST', `${svc.ingestUrl}/v1/buckets/${bucketSid}/ingest`, { token, body: { records: [makeRecord()] } });
}

/** `tapline_auth_lookups_total{result="found"}` of the small-limits service. */
async function lookupsFound(): Promise<number> {
  const text = await (await fetch(`${svc.apiUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('tapline_auth_lookups_total{result="found"}'));
  return Number(line?.split(' ')[1] ?? 0);
}

function expect429(res: { status: number; headers: Headers; body: unknown }, per: string): void {
  expect(res.status).toBe(429);
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(res.body).toMatchObject({
    success: false,
    error: { code: 'RATE_LIMIT_EXCEEDED', details: { per } },
  });
}

describe('deep pages', () => {
  it('refuses page × limit over 10,000 with a 400 that says how to narrow the list', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    expect((await a.get(`/v1/accounts/${acct.accountSid}/buckets?page=100&limit=100`)).status).toBe(200);
    const deep = await a.get<{ error: { code: string; message: string; details: Record<string, string> } }>(
      `/v1/accounts/${acct.accountSid}/buckets?page=101&limit=100`,
    );
    expect(deep.status).toBe(400);
    expect(deep.body.error.code).toBe('VALIDATION_ERROR');
    expect(deep.body.error.message).toMatch(/page × limit may be at most 10000/);
    expect(deep.body.error.details.page).toBe('at most 100 with limit 100');
    for (const p of [
      `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests?page=401&limit=25`,
      `/v1/accounts/${acct.accountSid}/apiTokens?page=1000000&limit=100`,
      `/v1/accounts/${acct.accountSid}/events?page=10001`,
    ])
      expect((await a.get(p)).status, p).toBe(400);
  });
});

describe('per-minute limits (ingest listener, /mcp)', () => {
  it('ingest: 429 with Retry-After past the calls per token', async () => {
    const acct = await newAccount();
    for (let i = 0; i < LIMITS.INGEST_RATE_LIMIT_TOKEN; i++)
      expect((await ingestTo(acct.bucketSid, acct.apiToken)).status).toBe(202);
    expect429(await ingestTo(acct.bucketSid, acct.apiToken), 'token');
    // Another token of the account is counted on its own.
    const other = await scopedToken(acct, ['requests:write']);
    expect((await ingestTo(acct.bucketSid, other)).status).toBe(202);
  });

  it('ingest: 429 past the calls per bucket, whatever the token', async () => {
    const acct = await newAccount();
    const tokens = await Promise.all([0, 1].map(() => scopedToken(acct, ['requests:write'])));
    for (let i = 0; i < LIMITS.INGEST_RATE_LIMIT_BUCKET; i++)
      expect((await ingestTo(acct.bucketSid, tokens[i % 2]!)).status).toBe(202);
    expect429(await ingestTo(acct.bucketSid, acct.apiToken), 'bucket');
  });

  it('/mcp: 429 with Retry-After past the requests per MCP token', async () => {
    const acct = await newAccount();
    const { token } = await mcpToken(acct, 'prod01');
    const call = () =>
      http('POST', `${svc.apiUrl}/mcp`, {
        token,
        body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
        headers: { accept: 'application/json, text/event-stream' },
      });
    for (let i = 0; i < LIMITS.MCP_RATE_LIMIT; i++) expect((await call()).status).toBe(200);
    // MCP clients show the message of a JSON-RPC error body (any other body reaches the person
    // only as "Server returned an error response"): the 429 is one, the envelope's code and
    // details in `data`.
    const over = await call();
    expect(over.status).toBe(429);
    const retryAfter = Number(over.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(over.body).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: {
        code: MCP_RATE_LIMITED,
        message: `Rate limit of ${LIMITS.MCP_RATE_LIMIT} requests per minute per MCP token exceeded; retry in ${retryAfter} s`,
        data: {
          code: 'RATE_LIMIT_EXCEEDED',
          details: { limit: LIMITS.MCP_RATE_LIMIT, per: 'MCP token', windowSeconds: 60, retryAfter },
        },
      },
    });
    // The official TypeScript client shows that message to its caller.
    const client = new Client({ name: 'tapline-limits-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${svc.apiUrl}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    });
    await expect(client.connect(transport)).rejects.toThrow(
      /Rate limit of 3 requests per minute per MCP token exceeded; retry in \d+ s/,
    );
    await client.close();
  });

  it('bounds the database look-ups of unknown tokens; known tokens keep working', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    // Let the look-up budget refill from whatever other files sent, then cache the token.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await ingestTo(acct.bucketSid, acct.apiToken)).status).toBe(202);
    // Another tenant's token is deactivated and its bucket renamed: each NOTIFY names its row, so
    // this service forgets that token and that bucket alone and keeps `acct`'s token cached
    // (dropping every cached credential would look it up again below, into an empty budget).
    await testPool().query('UPDATE api_tokens SET is_active = false WHERE account_sid = $1', [
      other.accountSid,
    ]);
    await testPool().query("UPDATE buckets SET name = name || '-renamed' WHERE sid = $1", [other.bucketSid]);
    await new Promise((r) => setTimeout(r, 500));
    expect((await ingestTo(other.bucketSid, other.apiToken)).status).toBe(401);
    const foundBefore = await lookupsFound();
    expect((await ingestTo(acct.bucketSid, acct.apiToken)).status).toBe(202);
    expect(await lookupsFound(), 'the cached token was looked up again').toBe(foundBefore);
    const made = Array.from(
      { length: 40 },
      (_, i) => `at_live_${'x'.repeat(30)}${String(i).padStart(4, '0')}`,
    );
    const answers = await Promise.all(made.map((t) => ingestTo(acct.bucketSid, t)));
    const statuses = answers.map((r) => r.status);
    expect(
      statuses.every((s) => s === 401 || s === 429),
      statuses.join(','),
    ).toBe(true);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(
      40 - 2 * LIMITS.AUTH_LOOKUPS_PER_SECOND,
    );
    const limited = answers.find((r) => r.status === 429)!;
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(limited.body).toMatchObject({ error: { code: 'RATE_LIMIT_EXCEEDED' } });
    // A known (cached) token is not looked up again: it is not held back.
    const known = await ingestTo(acct.bucketSid, acct.apiToken);
    expect(known.status, JSON.stringify(known.body)).toBe(202);
    // A refused value is remembered: asked again, it costs no look-up and stays a 401.
    await new Promise((r) => setTimeout(r, 1500));
    const first = answers.findIndex((r) => r.status === 401);
    for (let i = 0; i < 10; i++) expect((await ingestTo(acct.bucketSid, made[first]!)).status).toBe(401);
  });

  it('the shared stack (default limits) still takes ordinary traffic', async () => {
    const acct = await newAccount();
    for (let i = 0; i < 10; i++)
      expect((await ingest(acct.bucketSid, acct.apiToken, [makeRecord()])).status).toBe(202);
  });
});
