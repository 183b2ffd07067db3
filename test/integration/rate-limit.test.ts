import { describe, expect, it } from 'vitest';
import { createAccount } from '../../services/api/accounts.service.js';
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

const limitHeaders = (r: HttpResult) => ({
  limit: r.headers.get('x-ratelimit-limit'),
  remaining: r.headers.get('x-ratelimit-remaining'),
  reset: r.headers.get('x-ratelimit-reset'),
});

describe('rate limits (spec 8)', () => {
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

    // Every credential of the account shares the counter: the session token is refused too.
    for (const token of [acct.apiToken, acct.sessionToken]) {
      const over = await api(token).get(buckets);
      expect(over.status).toBe(429);
      expect(over.body).toMatchObject({ success: false, error: { code: 'RATE_LIMIT_EXCEEDED' } });
      expect(limitHeaders(over)).toEqual({ limit: '5', remaining: '0', reset: h1.reset });
      const retryAfter = Number(over.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(3500);
      expect(retryAfter).toBeLessThanOrEqual(3600);
    }

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
