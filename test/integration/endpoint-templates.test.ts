import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  api,
  ingest,
  listAllRequests,
  makeRecord,
  newAccount,
  waitFor,
  type TestAccount,
} from '../helpers/client.js';
import { tokenWithScopes } from '../helpers/tokens.js';

/**
 * Endpoint template rules (docs/processing.md, "Endpoint templates") on the real stack: CRUD,
 * validation in the error envelope, scopes and account isolation; records ingested after a rule
 * is created are stored (and counted in the endpoint metrics) under its pattern while earlier
 * ones keep their endpoint; suggestions from the range's endpoint metrics.
 */

interface Template {
  sid: string;
  accountSid: string;
  bucketSid: string;
  pattern: string;
  method: string | null;
  createdAt: string;
  updatedAt: string | null;
}
interface Envelope {
  success: false;
  error: { code: string; message: string; details: Record<string, unknown> };
}
interface Suggestions {
  startDate: string;
  endDate: string;
  suggestions: { pattern: string; examples: string[]; endpoints: number; requests: number }[];
}
type Stored = Record<string, unknown> & { contextSid: string | null; endpoint: string };

const tag = () => randomBytes(5).toString('hex');
const base = (a: TestAccount, bucketSid = a.bucketSid) =>
  `/v1/accounts/${a.accountSid}/buckets/${bucketSid}/endpointTemplates`;

const CODES = ['XMAS24', 'FREESHIP', 'SPRING10', 'WELCOME5', 'BLACKFRI'];

async function storedWith(a: TestAccount, ctx: string, n: number): Promise<Stored[]> {
  return waitFor(
    async () => {
      const all = (await listAllRequests(a.apiToken, a.accountSid, a.bucketSid)) as Stored[];
      const mine = all.filter((r) => r.contextSid === ctx);
      return mine.length >= n ? mine : undefined;
    },
    { timeoutMs: 40_000, what: `${n} stored records of ${ctx}` },
  );
}

/** Ingests `paths` with one context and returns the stored records once all are readable. */
async function send(a: TestAccount, paths: string[], method = 'GET'): Promise<Stored[]> {
  const ctx = `ctx-${tag()}`;
  const res = await ingest(
    a.bucketSid,
    a.apiToken,
    paths.map((path) => {
      const r = makeRecord({ contextSid: ctx });
      return {
        ...r,
        request: { ...(r.request as object), method, path, url: `https://api.example.com${path}` },
      };
    }),
  );
  expect(res.status, res.text).toBe(202);
  return storedWith(a, ctx, paths.length);
}

describe('endpoint templates: CRUD, validation, isolation', () => {
  it('creates, lists in order, reads, updates and deletes a bucket rule', async () => {
    const a = await newAccount();
    const c = api(a.apiToken);
    const empty = await c.get<{ hasMore: boolean; records: Template[] }>(base(a));
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({ hasMore: false, records: [] });

    const first = await c.post<Template>(base(a), { pattern: '/coupons/{code}' });
    expect(first.status, first.text).toBe(201);
    expect(first.body).toMatchObject({
      accountSid: a.accountSid,
      bucketSid: a.bucketSid,
      pattern: '/coupons/{code}',
      method: null,
      updatedAt: null,
    });
    expect(first.body.sid).toMatch(/^ept_[A-Za-z0-9]{27}$/);
    const second = await c.post<Template>(base(a), { pattern: '/gift-cards/{card}', method: 'post' });
    expect(second.status, second.text).toBe(201);
    expect(second.body.method).toBe('POST');

    const list = await c.get<{ records: Template[] }>(base(a));
    expect(list.body.records.map((t) => t.pattern)).toEqual(['/coupons/{code}', '/gift-cards/{card}']);
    expect((await c.get<Template>(`${base(a)}/${first.body.sid}`)).body).toEqual(first.body);

    const put = await c.put<Template>(`${base(a)}/${second.body.sid}`, { method: null });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({ pattern: '/gift-cards/{card}', method: null });
    expect(put.body.updatedAt).not.toBeNull();
    const renamed = await c.put<Template>(`${base(a)}/${second.body.sid}`, {
      pattern: '/gift-cards/{number}',
    });
    expect(renamed.body).toMatchObject({ pattern: '/gift-cards/{number}', method: null });

    const del = await c.delete(`${base(a)}/${first.body.sid}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ sid: first.body.sid, deleted: true });
    expect((await c.get(`${base(a)}/${first.body.sid}`)).status).toBe(404);
    expect((await c.delete(`${base(a)}/${first.body.sid}`)).status).toBe(404);
    expect((await c.get<{ records: Template[] }>(base(a))).body.records.map((t) => t.sid)).toEqual([
      second.body.sid,
    ]);
  });

  it('refuses bad patterns, duplicates and one rule too many in the error envelope', async () => {
    const a = await newAccount();
    const c = api(a.apiToken);
    const refused = async (body: unknown, status: number, code: string, field?: string, phrase?: string) => {
      const res = await c.post<Envelope>(base(a), body);
      expect(res.status, res.text).toBe(status);
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe(code);
      if (field) expect(String(res.body.error.details[field]), res.text).toContain(phrase ?? '');
      return res.body.error;
    };
    await refused(
      { pattern: 'coupons/{code}' },
      400,
      'VALIDATION_ERROR',
      'body.pattern',
      'must start with /',
    );
    await refused(
      { pattern: '/coupons' },
      400,
      'VALIDATION_ERROR',
      'body.pattern',
      'at least one {placeholder}',
    );
    await refused(
      { pattern: '/coupons/v{n}' },
      400,
      'VALIDATION_ERROR',
      'body.pattern',
      'whole {placeholder}',
    );
    await refused({ pattern: '/coupons/*' }, 400, 'VALIDATION_ERROR', 'body.pattern', 'must not contain *');
    await refused({ pattern: '/coupons/{code}', method: 'G ET' }, 400, 'VALIDATION_ERROR', 'body.method');
    await refused({ pattern: '/coupons/{code}', extra: 1 }, 400, 'VALIDATION_ERROR');
    await refused({}, 400, 'VALIDATION_ERROR');
    const msg = (await refused({ pattern: '/a//{x}' }, 400, 'VALIDATION_ERROR')).message;
    expect(msg).toBe('pattern must not have an empty segment (// or a trailing /)');

    expect((await c.post(base(a), { pattern: '/coupons/{code}' })).status).toBe(201);
    const dup = await refused(
      { pattern: '/coupons/{id}' },
      409,
      'CONFLICT',
      'body.pattern',
      'already matches',
    );
    expect(dup.message).toContain('already has a template rule');
    // Another method is another rule; the same method twice is a duplicate.
    expect((await c.post(base(a), { pattern: '/coupons/{code}', method: 'POST' })).status).toBe(201);
    await refused({ pattern: '/coupons/{c}', method: 'post' }, 409, 'CONFLICT');
    // An update into a duplicate is refused too and changes nothing.
    const other = await c.post<Template>(base(a), { pattern: '/vouchers/{v}' });
    const upd = await c.put<Envelope>(`${base(a)}/${other.body.sid}`, { pattern: '/coupons/{x}' });
    expect(upd.status, upd.text).toBe(409);
    expect((await c.get<Template>(`${base(a)}/${other.body.sid}`)).body.pattern).toBe('/vouchers/{v}');
    const badUpd = await c.put<Envelope>(`${base(a)}/${other.body.sid}`, { pattern: '/vouchers' });
    expect(badUpd.status).toBe(400);
    expect(badUpd.body.error.details['body.pattern']).toContain('at least one {placeholder}');

    // 100 rules at most per bucket: 3 exist, 97 more fit, the 101st is refused.
    for (let i = 0; i < 97; i++) expect((await c.post(base(a), { pattern: `/r${i}/{x}` })).status).toBe(201);
    const tooMany = await refused({ pattern: '/one-more/{x}' }, 409, 'CONFLICT');
    expect(tooMany.message).toContain('at most 100 endpoint template rules');
    expect((await c.get<{ records: Template[] }>(base(a))).body.records).toHaveLength(100);
  });

  it("scopes: reading takes buckets:read, writing buckets:write; another account's bucket and rule are 404", async () => {
    const a = await newAccount();
    const b = await newAccount();
    const rule = await api(a.apiToken).post<Template>(base(a), { pattern: '/coupons/{code}' });
    expect(rule.status).toBe(201);

    const reader = await tokenWithScopes(a, ['buckets:read']);
    expect((await api(reader).get(base(a))).status).toBe(200);
    const denied = await api(reader).post<Envelope>(base(a), { pattern: '/x/{y}' });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('FORBIDDEN');
    expect((await api(reader).delete(`${base(a)}/${rule.body.sid}`)).status).toBe(403);
    const metricsOnly = await tokenWithScopes(a, ['metrics:read']);
    expect((await api(metricsOnly).get(base(a))).status).toBe(403);
    expect((await api(metricsOnly).get(`${base(a)}/suggestions`)).status).toBe(200);
    expect((await api(reader).get(`${base(a)}/suggestions`)).status).toBe(403);

    // b's token on a's paths, and a's rule under b's bucket: not found, nothing changed.
    const x = api(b.apiToken);
    expect((await x.get(base(a))).status).toBe(404);
    expect((await x.post(base(a), { pattern: '/x/{y}' })).status).toBe(404);
    expect((await x.get(`${base(a)}/suggestions`)).status).toBe(404);
    expect(
      (await x.get(`/v1/accounts/${b.accountSid}/buckets/${a.bucketSid}/endpointTemplates`)).status,
    ).toBe(404);
    expect((await x.get(`${base(b)}/${rule.body.sid}`)).status).toBe(404);
    expect((await x.put(`${base(b)}/${rule.body.sid}`, { pattern: '/y/{z}' })).status).toBe(404);
    expect((await x.delete(`${base(b)}/${rule.body.sid}`)).status).toBe(404);
    expect((await api(a.apiToken).get<Template>(`${base(a)}/${rule.body.sid}`)).body.pattern).toBe(
      '/coupons/{code}',
    );
    expect((await x.get<{ records: Template[] }>(base(b))).body.records).toEqual([]);
  });
});

describe('endpoint templates: the processor and the suggestions', () => {
  it('suggests /coupons/{coupon}; once the rule exists new records are stored under it, past ones keep theirs', async () => {
    const a = await newAccount();
    const c = api(a.apiToken);
    const paths = CODES.map((code) => `/coupons/${code}`);
    const before = await send(a, [...paths, ...paths, '/health', '/orders/123']);
    expect(new Set(before.map((r) => r.endpoint))).toEqual(new Set([...paths, '/health', '/orders/{id}']));

    const s = await waitFor(
      async () => {
        const res = await c.get<Suggestions>(`${base(a)}/suggestions`);
        expect(res.status, res.text).toBe(200);
        return res.body.suggestions.length ? res.body : undefined;
      },
      { timeoutMs: 20_000, what: 'suggestions from the endpoint metrics' },
    );
    expect(s.suggestions).toEqual([
      { pattern: '/coupons/{coupon}', examples: expect.any(Array), endpoints: 5, requests: 10 },
    ]);
    expect([...s.suggestions[0]!.examples].sort()).toEqual([...paths].sort());
    expect(Date.parse(s.endDate) - Date.parse(s.startDate)).toBeGreaterThan(23 * 3600_000);
    // A range before the traffic suggests nothing; a bad date is a 400.
    const old = await c.get<Suggestions>(`${base(a)}/suggestions?startDate=2020-01-01&endDate=2020-01-02`);
    expect(old.body.suggestions).toEqual([]);
    const bad = await c.get<Envelope>(`${base(a)}/suggestions?startDate=yesterday`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_ERROR');

    const created = await c.post<Template>(base(a), { pattern: s.suggestions[0]!.pattern });
    expect(created.status, created.text).toBe(201);
    // The processor reloads the account on the rules NOTIFY: probe until a new record shows it.
    await waitFor(
      async () => {
        const [probe] = await send(a, ['/coupons/PROBE1']);
        return probe!.endpoint === '/coupons/{coupon}' ? true : undefined;
      },
      { timeoutMs: 30_000, what: 'the template rule applied by the processor' },
    );
    const after = await send(a, [...paths, '/coupons/NEWCODE', '/coupons/NEWCODE/redeem', '/orders/77']);
    const byPath = Object.fromEntries(after.map((r) => [(r.request as { path: string }).path, r.endpoint]));
    for (const p of [...paths, '/coupons/NEWCODE']) expect(byPath[p], p).toBe('/coupons/{coupon}');
    expect(byPath['/coupons/NEWCODE/redeem']).toBe('/coupons/NEWCODE/redeem');
    expect(byPath['/orders/77']).toBe('/orders/{id}');

    // Records stored before the rule keep their endpoint.
    const again = (await listAllRequests(a.apiToken, a.accountSid, a.bucketSid)) as Stored[];
    const old1 = again.filter((r) => before.some((b) => b.sid === r.sid));
    expect(old1.filter((r) => r.endpoint === '/coupons/XMAS24')).toHaveLength(2);

    // The endpoint metrics group the new records as one endpoint, and the suggestion is gone.
    const perf = await c.get<{ metrics: { group: string; requestCount: number }[] }>(
      `/v1/accounts/${a.accountSid}/metrics/performance?bucketSid=${a.bucketSid}&groupBy=endpoint&limit=100`,
    );
    expect(perf.status, perf.text).toBe(200);
    const merged = perf.body.metrics.find((m) => m.group === '/coupons/{coupon}');
    expect(merged?.requestCount).toBeGreaterThanOrEqual(7);
    expect((await c.get<Suggestions>(`${base(a)}/suggestions`)).body.suggestions).toEqual([]);

    // A method-limited rule applies to that method only; deleting a rule stops it for new records.
    const post = await c.post<Template>(base(a), { pattern: '/carts/{cart}', method: 'POST' });
    await waitFor(
      async () => {
        const [probe] = await send(a, ['/carts/ABC'], 'POST');
        return probe!.endpoint === '/carts/{cart}' ? true : undefined;
      },
      { timeoutMs: 30_000, what: 'the POST rule applied' },
    );
    const [getCart] = await send(a, ['/carts/ABC'], 'GET');
    expect(getCart!.endpoint).toBe('/carts/ABC');
    expect((await c.delete(`${base(a)}/${post.body.sid}`)).status).toBe(200);
    await waitFor(
      async () => {
        const [probe] = await send(a, ['/carts/ABC'], 'POST');
        return probe!.endpoint === '/carts/ABC' ? true : undefined;
      },
      { timeoutMs: 30_000, what: 'the deleted rule no longer applied' },
    );
  });

  it("one account's rules never apply to another account's records", async () => {
    const a = await newAccount();
    const b = await newAccount();
    expect((await api(a.apiToken).post(base(a), { pattern: '/coupons/{code}' })).status).toBe(201);
    await waitFor(
      async () => {
        const [probe] = await send(a, ['/coupons/PROBE2']);
        return probe!.endpoint === '/coupons/{code}' ? true : undefined;
      },
      { timeoutMs: 30_000, what: 'the rule applied to its own account' },
    );
    const [other] = await send(b, ['/coupons/XMAS24']);
    expect(other!.endpoint).toBe('/coupons/XMAS24');
  });
});
