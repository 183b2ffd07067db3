import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import pg from 'pg';
import { inject } from 'vitest';
import { createAccount, type NewAccount } from '../../services/api/accounts/accounts.service.js';
import type { TestEnv } from './global-setup.js';

export { waitFor } from './service-process.js';

export function testEnv(): TestEnv {
  return inject('env');
}

let pool: pg.Pool | undefined;
/** Direct Postgres access for setup only (accounts); the service's chDB is never opened here. */
export function testPool(): pg.Pool {
  pool ??= new pg.Pool({ connectionString: testEnv().databaseUrl, max: 3 });
  return pool;
}

export type TestAccount = NewAccount & { bucketSid: string };

/** A fresh account per test (docs/architecture.md, convention 8): tests never see each other's data. */
export async function newAccount(
  opts: { plan?: 'standard' | 'pro' | 'enterprise'; rateLimit?: number } = {},
): Promise<TestAccount> {
  const tag = randomBytes(6).toString('hex');
  const acct = await createAccount(testPool(), {
    name: `Test ${tag}`,
    email: `test-${tag}@example.test`,
    bucketName: `bucket-${tag}`,
    plan: opts.plan ?? 'enterprise',
    rateLimit: opts.rateLimit ?? 1_000_000,
    // Each test adds the rules it checks: its records are stored as sent unless it does. The
    // recommended redactions new accounts start with are checked in secure-defaults.test.ts.
    recommendedRedactions: false,
  });
  return acct as TestAccount;
}

export interface HttpResult<T = Record<string, unknown>> {
  status: number;
  body: T;
  headers: Headers;
  text: string;
}

export async function http<T = Record<string, unknown>>(
  method: string,
  url: string,
  opts: { token?: string; body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<HttpResult<T>> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | Buffer | undefined = opts.rawBody;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(url, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed as T, headers: res.headers, text };
}

/** API client bound to a token. */
export function api(token?: string) {
  const base = testEnv().apiUrl;
  return {
    get: <T = Record<string, unknown>>(p: string) => http<T>('GET', base + p, { token }),
    post: <T = Record<string, unknown>>(p: string, body?: unknown) =>
      http<T>('POST', base + p, { token, body }),
    put: <T = Record<string, unknown>>(p: string, body?: unknown) =>
      http<T>('PUT', base + p, { token, body }),
    delete: <T = Record<string, unknown>>(p: string) => http<T>('DELETE', base + p, { token }),
  };
}

export async function ingest(
  bucketSid: string,
  token: string,
  records: unknown[],
  opts: { gzip?: boolean } = {},
): Promise<HttpResult<{ accepted: number; rejected: { index: number; error: { code: string } }[] }>> {
  const url = `${testEnv().ingestUrl}/v1/buckets/${bucketSid}/ingest`;
  const json = JSON.stringify({ records });
  if (opts.gzip) {
    return http('POST', url, {
      token,
      rawBody: gzipSync(json),
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    });
  }
  return http('POST', url, { token, rawBody: json, headers: { 'content-type': 'application/json' } });
}

let seq = 0;
/** A plausible captured request; `overrides` are merged shallowly. */
export function makeRecord(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  seq++;
  return {
    environmentSid: 'prod01',
    createdAt: new Date(Date.now() - 1000).toISOString(),
    request: {
      host: 'api.example.com',
      method: 'GET',
      path: `/users/${seq}/orders`,
      port: 443,
      url: `https://api.example.com/users/${seq}/orders?page=1`,
      queryString: { page: '1' },
      headers: { 'content-type': 'application/json', 'x-seq': seq },
      body: JSON.stringify({ seq }),
      contentType: 'application/json',
      size: 11,
    },
    response: {
      statusCode: 200,
      headers: { 'content-type': 'application/json' },
      size: 42,
      body: JSON.stringify({ ok: true, seq }),
      contentType: 'application/json',
    },
    timings: { duration: 12.5 },
    ...overrides,
  };
}

/** Lists every request of a bucket through the API (all pages). */
export async function listAllRequests(token: string, accountSid: string, bucketSid: string, query = '') {
  const out: Record<string, unknown>[] = [];
  for (let page = 1; ; page++) {
    const res = await api(token).get<{ hasMore: boolean; records: Record<string, unknown>[] }>(
      `/v1/accounts/${accountSid}/buckets/${bucketSid}/requests?limit=100&page=${page}${query ? `&${query}` : ''}`,
    );
    if (res.status !== 200) throw new Error(`list failed: ${res.status} ${res.text}`);
    out.push(...res.body.records);
    if (!res.body.hasMore) return out;
  }
}

/**
 * The UTC date (YYYY-MM-DD) `daysAgo` days before now: fixed-looking timestamps for tests that
 * compare exact strings, always inside the retention, so a test does not expire with the calendar.
 */
export function recentDay(daysAgo = 2): string {
  return new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
}
