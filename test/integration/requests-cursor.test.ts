import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  api,
  ingest,
  listAllRequests,
  makeRecord,
  newAccount,
  testEnv,
  waitFor,
  type HttpResult,
  type TestAccount,
} from '../helpers/client.js';
import { mcpToken } from '../helpers/scoped-token.js';

/**
 * Paging by time with a cursor (createdAt, sid): records four to a millisecond, in two buckets,
 * paged through the request list (both orders) and MCP `search_requests` (both buckets merged)
 * with page sizes that split the millisecond groups: every record comes exactly once, in order.
 */

type Rec = Record<string, unknown>;
type Page = { hasMore: boolean; records: Rec[]; nextCursor?: string };
type Search = { hits: Rec[]; nextCursor: string | null; truncated: { howToGetMore: string } | false };

const PER_MS = 4;

describe('cursor paging of requests', () => {
  let acct: TestAccount;
  let second: string;
  /** sids per bucket */
  const sids: Record<string, string[]> = {};
  let base: number;
  let mcp: Client;

  beforeAll(async () => {
    acct = await newAccount();
    const res = await api(acct.apiToken).post<{ sid: string }>(`/v1/accounts/${acct.accountSid}/buckets`, {
      name: 'cursor-second',
    });
    expect(res.status, res.text).toBe(201);
    second = res.body.sid;
    base = Date.now() - 3_600_000;
    // Bucket one: 40 milliseconds of 4 records; bucket two: 20 of the same milliseconds, 4 each.
    for (const [bucket, ms] of [
      [acct.bucketSid, 40],
      [second, 20],
    ] as const) {
      const records = Array.from({ length: ms * PER_MS }, (_, i) =>
        makeRecord({ createdAt: new Date(base + Math.floor(i / PER_MS) * 3).toISOString() }),
      );
      const r = await ingest(bucket, acct.apiToken, records);
      expect(r.status, r.text).toBe(202);
      expect(r.body.accepted).toBe(records.length);
    }
    for (const [bucket, n] of [
      [acct.bucketSid, 160],
      [second, 80],
    ] as const) {
      await waitFor(
        async () => (await listAllRequests(acct.apiToken, acct.accountSid, bucket)).length === n,
        { timeoutMs: 40_000, what: `${n} requests stored` },
      );
      sids[bucket] = (await listAllRequests(acct.apiToken, acct.accountSid, bucket)).map(
        (r) => r.sid as string,
      );
    }
    mcp = new Client({ name: 'tapline-cursor-test', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${testEnv().apiUrl}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${(await mcpToken(acct, 'prod01')).token}` } },
      }),
    );
  }, 120_000);

  afterAll(async () => {
    await mcp?.close();
  });

  /** The records' (createdAt, sid) pairs are in `order`, with no pair twice. */
  const expectOrdered = (records: Rec[], order: 'asc' | 'desc') => {
    const keys = records.map((r) => `${r.createdAt as string}|${r.sid as string}`);
    const sorted = [...keys].sort();
    expect(keys).toEqual(order === 'asc' ? sorted : sorted.reverse());
  };

  for (const order of ['desc', 'asc'] as const) {
    it(`the request list pages by nextCursor (${order}): every record once`, async () => {
      const seen: Rec[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res: HttpResult<Page> = await api(acct.apiToken).get<Page>(
          `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests?limit=7&order=${order}` +
            (cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''),
        );
        expect(res.status, res.text).toBe(200);
        const page = res.body;
        seen.push(...page.records);
        expect(page.nextCursor === undefined, 'nextCursor exactly when hasMore').toBe(!page.hasMore);
        cursor = page.nextCursor ?? null;
        pages++;
      } while (typeof cursor === 'string' && pages < 100);
      expect(pages).toBe(Math.ceil(160 / 7));
      expect(seen.map((r) => r.sid).sort()).toEqual([...sids[acct.bucketSid]!].sort());
      expectOrdered(seen, order);
    });
  }

  it('MCP search_requests pages by nextCursor over both buckets: every record once', async () => {
    const seen: Rec[] = [];
    let cursor: string | null = null;
    let calls = 0;
    do {
      const res = (await mcp.callTool({
        name: 'search_requests',
        arguments: { limit: 7, ...(cursor ? { cursor } : {}) },
      })) as { isError?: boolean; content: { text: string }[] };
      expect(res.isError, res.content[0]?.text).toBeFalsy();
      const out = JSON.parse(res.content[0]!.text) as Search;
      seen.push(...out.hits);
      if (out.nextCursor !== null) {
        expect(out.truncated).not.toBe(false);
        expect((out.truncated as { howToGetMore: string }).howToGetMore).toContain(
          `cursor=${out.nextCursor}`,
        );
      }
      cursor = out.nextCursor;
      calls++;
    } while (typeof cursor === 'string' && calls < 100);
    const all = [...sids[acct.bucketSid]!, ...sids[second]!];
    expect(seen.length).toBe(all.length);
    expect(seen.map((h) => h.sid).sort()).toEqual(all.sort());
    expectOrdered(seen, 'desc');
  });

  it('a malformed cursor, or one with another sort or a page, is a 400 naming the field', async () => {
    const base = `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests`;
    const first = await api(acct.apiToken).get<Page>(`${base}?limit=5`);
    const cursor = encodeURIComponent(first.body.nextCursor!);
    for (const [query, field] of [
      ['cursor=yesterday', 'cursor'],
      [`cursor=${encodeURIComponent('2026-13-45T99:00:00.000Z|req_x')}`, 'cursor'],
      [`cursor=${cursor}&sort=duration`, 'cursor'],
      [`cursor=${cursor}&page=2`, 'page'],
    ] as const) {
      const res = await api(acct.apiToken).get<{
        success: boolean;
        error: { code: string; details: Record<string, unknown> };
      }>(`${base}?${query}`);
      expect(res.status, `${query}: ${res.text.slice(0, 300)}`).toBe(400);
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(JSON.stringify(res.body.error.details), query).toContain(field);
    }
    const bad = (await mcp.callTool({ name: 'search_requests', arguments: { cursor: 'yesterday' } })) as {
      isError?: boolean;
      content: { text: string }[];
    };
    expect(bad.isError).toBe(true);
    expect(bad.content[0]!.text).toContain('cursor');
  });
});
