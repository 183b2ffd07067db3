import { describe, expect, it } from 'vitest';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { parseConfig } from '../../services/shared/config.js';
import {
  api,
  http,
  ingest,
  makeRecord,
  newAccount,
  testEnv,
  testPool,
  type HttpResult,
} from '../helpers/client.js';
import { tokenWithScopes } from '../helpers/tokens.js';

const limitHeaders = (r: HttpResult) => ({
  limit: r.headers.get('x-ratelimit-limit'),
  remaining: r.headers.get('x-ratelimit-remaining'),
  reset: r.headers.get('x-ratelimit-reset'),
});

describe('rate limits (docs/auth.md)', () => {
  it('counts per account, sends the headers on every answer and 429s after the limit', async () => {
    const acct = await newAccount({ plan: 'enterprise', rateLimit: 5 });
    const a = api(acct.apiToken);
    const buckets = `/v1/accounts/${acct.accountSid}/buckets`;

    const before = Math.floor(Date.now() / 1000);
    const first = await a.get(buckets);
    expect(first.status).toBe(200);
    const h1 = limitHeaders(first);
    expect(h1.limit).toBe('5');
    expect(h1.remaining).toBe('4');
    expect(h1.reset).toMatch(/^\d+$/);
    const reset = Number(h1.reset);
    // A Unix timestamp in seconds, one hour window.
    expect(reset).toBeGreaterThanOrEqual(before + 3599);
    expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 3600);

    // Error answers after authentication carry the headers too, and count.
    const missing = await a.get(`${buckets}/bkt_${'x'.repeat(27)}`);
    expect(missing.status).toBe(404);
    expect(limitHeaders(missing)).toEqual({ limit: '5', remaining: '3', reset: h1.reset });
    const invalid = await a.post(buckets, { name: '' });
    expect(invalid.status).toBe(400);
    expect(limitHeaders(invalid)).toEqual({ limit: '5', remaining: '2', reset: h1.reset });

    // Requests without a valid token are not counted and carry no headers.
    const anon = await api().get(buckets);
    expect(anon.status).toBe(401);
    expect(anon.headers.get('x-ratelimit-limit')).toBeNull();

    expect(limitHeaders(await a.get(buckets)).remaining).toBe('1');
    const last = await a.get(buckets);
    expect(last.status).toBe(200);
    expect(limitHeaders(last)).toEqual({ limit: '5', remaining: '0', reset: h1.reset });

    // Every API token of the account shares the counter.
    const secondToken = await tokenWithScopes(acct, ['buckets:read']);
    for (const token of [acct.apiToken, secondToken]) {
      const over = await api(token).get(buckets);
      expect(over.status).toBe(429);
      expect(over.body).toMatchObject({ success: false, error: { code: 'RATE_LIMIT_EXCEEDED' } });
      expect(limitHeaders(over)).toEqual({ limit: '5', remaining: '0', reset: h1.reset });
      const retryAfter = Number(over.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(3500);
      expect(retryAfter).toBeLessThanOrEqual(3600);
    }
    // A signed-in person's dashboard calls count in the person's own window, not the plan's: the
    // session is still served, with its own headers (SESSION_RATE_LIMIT, default 20,000).
    const bySession = await api(acct.sessionToken).get(buckets);
    expect(bySession.status, bySession.text).toBe(200);
    expect(limitHeaders(bySession).limit).toBe('20000');
    expect(limitHeaders(bySession).remaining).toBe('19999');
    // The account page shows the plan's window to the person, uncounted by their call.
    const page = await api(acct.sessionToken).get<{ rateLimit: { limit: number; used: number } }>(
      `/v1/accounts/${acct.accountSid}`,
    );
    expect(page.body.rateLimit).toMatchObject({ limit: 5, used: 7 });

    // Another account is not affected.
    const other = await newAccount({ plan: 'enterprise', rateLimit: 5 });
    const otherRes = await api(other.apiToken).get(`/v1/accounts/${other.accountSid}/buckets`);
    expect(otherRes.status).toBe(200);
    expect(limitHeaders(otherRes).remaining).toBe('4');

    // The ingest listener is governed by its own size limits, not by the plan rate.
    const sent = await ingest(acct.bucketSid, acct.apiToken, [makeRecord()]);
    expect(sent.status).toBe(202);
    expect(sent.headers.get('x-ratelimit-limit')).toBeNull();

    // The OpenAPI document needs no token and is not counted.
    const doc = await api().get('/v1/openapi.json');
    expect(doc.status).toBe(200);
    expect(doc.headers.get('x-ratelimit-limit')).toBeNull();
  });

  it('counts a /v1 path no route matches (404, 405) and answers it with the headers', async () => {
    const acct = await newAccount({ plan: 'enterprise', rateLimit: 4 });
    const a = api(acct.apiToken);
    const nope = await a.get('/v1/nope');
    expect(nope.status).toBe(404);
    expect(nope.body).toMatchObject({ success: false, error: { code: 'RESOURCE_NOT_FOUND' } });
    expect(limitHeaders(nope).limit).toBe('4');
    expect(limitHeaders(nope).remaining).toBe('3');
    const wrongMethod = await http('PATCH', `${testEnv().apiUrl}/v1/accounts/${acct.accountSid}/buckets`, {
      token: acct.apiToken,
      body: {},
    });
    expect(wrongMethod.status).toBe(405);
    expect(limitHeaders(wrongMethod)).toEqual({ ...limitHeaders(nope), remaining: '2' });
    // Without a valid token: the same 404, not counted, no headers.
    const anon = await api('at_live_notarealtoken000000000000000000000').get('/v1/nope');
    expect(anon.status).toBe(404);
    expect(anon.headers.get('x-ratelimit-limit')).toBeNull();
    expect(limitHeaders(await a.get(`/v1/accounts/${acct.accountSid}/buckets`)).remaining).toBe('1');
    expect(limitHeaders(await a.get('/v1/still-nope')).remaining).toBe('0');
    const over = await a.get('/v1/nope');
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ success: false, error: { code: 'RATE_LIMIT_EXCEEDED' } });
    const overMethod = await http('PATCH', `${testEnv().apiUrl}/v1/accounts/${acct.accountSid}/buckets`, {
      token: acct.apiToken,
      body: {},
    });
    expect(overMethod.status).toBe(429);
    expect(Number(overMethod.headers.get('retry-after'))).toBeGreaterThan(3500);
  });

  it('does not count calls refused for authentication or scope', async () => {
    const acct = await newAccount({ plan: 'enterprise', rateLimit: 3 });
    const base = `/v1/accounts/${acct.accountSid}`;
    // An ingest-only token spread over app configs: every management call it makes is a 403.
    const ingestOnly = api(await tokenWithScopes(acct, ['requests:write']));
    for (let i = 0; i < 10; i++) {
      const refused = await ingestOnly.get(`${base}/buckets`);
      expect(refused.status).toBe(403);
      expect(refused.headers.get('x-ratelimit-limit')).toBeNull();
      // Refused for scope before its body is validated: a bad body is still a 403, not counted.
      expect((await ingestOnly.post(`${base}/buckets`, { name: '' })).status).toBe(403);
    }
    // Another account's sid in the path: 404 before counting too.
    const other = await newAccount();
    expect((await ingestOnly.get(`/v1/accounts/${other.accountSid}/buckets`)).status).toBe(404);
    // Unknown, expired and garbage credentials.
    for (const token of ['at_live_notarealtoken000000000000000000000', 'garbage-token', undefined])
      expect((await api(token).get(`${base}/buckets`)).status).toBe(401);
    // The account's whole quota is left for its administrators' tokens.
    const admin = api(acct.apiToken);
    const first = await admin.get(`${base}/buckets`);
    expect(first.status).toBe(200);
    expect(limitHeaders(first)).toMatchObject({ limit: '3', remaining: '2' });
    expect((await admin.get(`${base}/buckets`)).status).toBe(200);
    expect((await admin.get(`${base}/buckets`)).status).toBe(200);
    expect((await admin.get(`${base}/buckets`)).status).toBe(429);
  });

  it('takes the limit from the plan', async () => {
    // The test stack leaves RATE_LIMIT_* unset: the defaults apply.
    const defaults = parseConfig({}).rateLimits;
    const standard = await newAccount({ plan: 'standard' });
    const pro = await newAccount({ plan: 'pro' });
    const enterprise = await createAccount(testPool(), {
      name: 'Enterprise default',
      email: `ent-${Date.now()}-${Math.random().toString(36).slice(2)}@example.test`,
      plan: 'enterprise',
    });
    for (const [acct, expected] of [
      [standard, defaults.standard],
      [pro, defaults.pro],
      [enterprise, defaults.enterprise],
    ] as const) {
      const res = await api(acct.apiToken).get(`/v1/accounts/${acct.accountSid}/buckets`);
      expect(res.status).toBe(200);
      expect(limitHeaders(res).limit).toBe(String(expected));
      expect(limitHeaders(res).remaining).toBe(String(expected - 1));
    }
    expect(testEnv().serviceEnv.RATE_LIMIT_STANDARD).toBeUndefined();
  });

  it('keeps the counters in an unlogged table (no WAL flush on the request path)', async () => {
    const r = await testPool().query<{ relpersistence: string }>(
      "SELECT relpersistence FROM pg_class WHERE relname = 'api_rate_windows' AND relkind = 'r'",
    );
    expect(r.rows).toEqual([{ relpersistence: 'u' }]);
  });
});
