import { describe, expect, it } from 'vitest';
import { api, ingest, makeRecord, newAccount, waitFor } from '../helpers/client.js';
import { scopedToken } from '../helpers/scoped-token.js';

type View = Record<string, unknown> & { sid: string };
type List<T> = { hasMore: boolean; records: T[] };
type Req = { sid: string; request: { path: string; method: string } };

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function details(body: unknown): Record<string, string> {
  return (body as { error: { details: Record<string, string> } }).error.details;
}

describe('stream views', () => {
  it('creates, lists, gets, updates partially and deletes', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/streamViews`;

    const created = await a.post<View>(base, { name: 'Server errors', criteria: 'status:5xx -path:/health' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      accountSid: acct.accountSid,
      bucketSid: acct.bucketSid,
      name: 'Server errors',
      criteria: 'status:5xx -path:/health',
      icon: 'search',
      updatedAt: null,
      deletedAt: null,
    });
    expect(created.body.sid).toMatch(/^sv_[A-Za-z0-9]{27}$/);
    expect(created.body.createdAt).toMatch(ISO_MS);
    const sid = created.body.sid;
    const second = await a.post<View>(base, { name: 'Alpha', criteria: 'method:POST', icon: 'bolt' });
    expect(second.body.icon).toBe('bolt');

    const list = await a.get<List<View>>(`${base}?sort=name&order=asc`);
    expect(list.status).toBe(200);
    expect(list.body.hasMore).toBe(false);
    expect(list.body.records.map((v) => v.name)).toEqual(['Alpha', 'Server errors']);
    const paged = await a.get<List<View>>(`${base}?limit=1`);
    expect(paged.body.hasMore).toBe(true);
    expect(paged.body.records).toHaveLength(1);

    expect((await a.get<View>(`${base}/${sid}`)).body).toEqual(created.body);
    const starred = await a.put<View>(`${base}/${sid}`, { icon: 'star' });
    expect(starred.status).toBe(200);
    expect(starred.body).toMatchObject({
      icon: 'star',
      name: 'Server errors',
      criteria: 'status:5xx -path:/health',
    });
    expect(starred.body.updatedAt).toMatch(ISO_MS);
    const edited = await a.put<View>(`${base}/${sid}`, { name: 'Errors', criteria: 'status:>=500' });
    expect(edited.body).toMatchObject({ icon: 'star', name: 'Errors', criteria: 'status:>=500' });

    const del = await a.delete(`${base}/${sid}`);
    expect(del.body).toEqual({ sid, deleted: true });
    expect((await a.get(`${base}/${sid}`)).status).toBe(404);
    expect((await a.delete(`${base}/${sid}`)).status).toBe(404);
  });

  it('refuses invalid bodies and criteria that do not compile with 400', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/streamViews`;

    const missing = await a.post(base, { icon: 'star' });
    expect(missing.status).toBe(400);
    expect(Object.keys(details(missing.body))).toEqual(
      expect.arrayContaining(['body.name', 'body.criteria']),
    );
    const badIcon = await a.post(base, { name: 'x', criteria: '', icon: 'rocket', extra: 1 });
    expect(badIcon.status).toBe(400);
    expect(Object.keys(details(badIcon.body))).toEqual(expect.arrayContaining(['body.icon', 'body.extra']));

    const badCriteria = await a.post(base, { name: 'x', criteria: 'method:GET colour:red' });
    expect(badCriteria.status).toBe(400);
    expect(badCriteria.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
    expect(details(badCriteria.body)['body.criteria']).toContain('colour');
    expect((await a.post(base, { name: 'x', criteria: 'status:9000' })).status).toBe(400);

    const ok = await a.post<View>(base, { name: 'ok', criteria: '' });
    expect(ok.status).toBe(201);
    const badPut = await a.put(`${base}/${ok.body.sid}`, { criteria: 'path:"open' });
    expect(badPut.status).toBe(400);
    expect(details(badPut.body)['body.criteria']).toContain('Unterminated');
    expect((await a.put(`${base}/${ok.body.sid}`, { icon: 'rocket' })).status).toBe(400);
    expect((await a.get<View>(`${base}/${ok.body.sid}`)).body).toMatchObject({
      criteria: '',
      icon: 'search',
    });
  });

  it('answers 401 without a valid token, 403 without the scope, 404 for another account or bucket', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/streamViews`;
    const view = await a.post<View>(base, { name: 'mine', criteria: 'method:GET' });
    const one = `${base}/${view.body.sid}`;

    for (const token of [undefined, 'at_live_doesnotexist0000000000000000000000000000']) {
      const c = api(token);
      for (const res of [
        await c.get(base),
        await c.post(base, { name: 'x', criteria: '' }),
        await c.get(one),
        await c.put(one, { name: 'x' }),
        await c.delete(one),
      ]) {
        expect(res.status).toBe(401);
        expect(res.body).toMatchObject({ error: { code: 'INVALID_TOKEN' } });
      }
    }

    const readOnly = api(await scopedToken(acct, ['streamViews:read']));
    expect((await readOnly.get(base)).status).toBe(200);
    expect((await readOnly.get(one)).status).toBe(200);
    for (const res of [
      await readOnly.post(base, { name: 'x', criteria: '' }),
      await readOnly.put(one, { name: 'x' }),
      await readOnly.delete(one),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ error: { code: 'FORBIDDEN' } });
    }
    const writer = api(await scopedToken(acct, ['streamViews:write']));
    expect((await writer.get(base)).status).toBe(403);
    expect((await writer.delete(one)).status).toBe(403);
    expect((await writer.put(one, { name: 'renamed' })).status).toBe(200);

    // Another account's token, another account's bucket, another bucket of the same account.
    const stranger = api(other.apiToken);
    for (const res of [
      await stranger.get(base),
      await stranger.get(one),
      await stranger.put(one, { name: 'x' }),
      await stranger.delete(one),
      await stranger.post(base, { name: 'x', criteria: '' }),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ error: { code: 'RESOURCE_NOT_FOUND' } });
    }
    const theirBucket = `/v1/accounts/${acct.accountSid}/buckets/${other.bucketSid}/streamViews`;
    expect((await a.get(theirBucket)).status).toBe(404);
    expect((await a.post(theirBucket, { name: 'x', criteria: '' })).status).toBe(404);
    const b2 = (await a.post<View>(`/v1/accounts/${acct.accountSid}/buckets`, { name: 'b2' })).body.sid;
    const viaB2 = `/v1/accounts/${acct.accountSid}/buckets/${b2}/streamViews/${view.body.sid}`;
    expect((await a.get(viaB2)).status).toBe(404);
    expect((await a.delete(viaB2)).status).toBe(404);
    expect((await a.get(`${base}/sv_malformed`)).status).toBe(404);
    expect((await a.get<View>(one)).body.name).toBe('renamed');
  });

  it('filters the requests list with q= and view=, alone and combined', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const reqs = `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests`;
    const views = `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/streamViews`;
    const odd = `/api/it's "odd"\\%_`;
    const records = [
      makeRecord({
        request: { method: 'GET', path: '/api/users/1', host: 'api.example.com' },
        response: { statusCode: 200 },
        timings: { duration: 10 },
      }),
      makeRecord({
        request: { method: 'POST', path: '/api/orders', host: 'api.example.com' },
        response: { statusCode: 500 },
        timings: { duration: 300 },
        tags: [{ key: 'team', value: 'core' }],
        contextSid: 'ctx-42',
      }),
      makeRecord({
        environmentSid: 'stag01',
        direction: 'out',
        request: { method: 'POST', path: '/api/orders', host: 'payments.example.net' },
        response: { statusCode: 201 },
        timings: { duration: 50 },
      }),
      makeRecord({
        request: { method: 'GET', path: '/health' },
        response: { statusCode: 503 },
        timings: { duration: 5 },
        firewall: { blocked: true },
      }),
      makeRecord({ request: { method: 'DELETE', path: odd }, response: { statusCode: 204 }, timings: null }),
    ];
    expect((await ingest(acct.bucketSid, acct.apiToken, records)).status).toBe(202);
    await waitFor(async () => ((await a.get<List<Req>>(reqs)).body.records.length === 5 ? true : undefined));

    const paths = async (query: string) => {
      const res = await a.get<List<Req>>(`${reqs}?${query}`);
      expect(res.status, `${query}: ${res.text}`).toBe(200);
      return res.body.records.map((r) => `${r.request.method} ${r.request.path}`).sort();
    };
    const q = (text: string) => `q=${encodeURIComponent(text)}`;

    expect(await paths(q('method:POST'))).toEqual(['POST /api/orders', 'POST /api/orders']);
    expect(await paths(q('status:5xx'))).toEqual(['GET /health', 'POST /api/orders']);
    expect(await paths(q('status:>=500 -path:/health'))).toEqual(['POST /api/orders']);
    expect(await paths(q('status:200..299'))).toEqual([
      `DELETE ${odd}`,
      'GET /api/users/1',
      'POST /api/orders',
    ]);
    expect(await paths(q('path:/api/* duration:>100'))).toEqual(['POST /api/orders']);
    expect(await paths(q('-duration:>=10'))).toEqual([`DELETE ${odd}`, 'GET /health']);
    expect(await paths(q('env:stag01'))).toEqual(['POST /api/orders']);
    expect(await paths(q('direction:out'))).toEqual(['POST /api/orders']);
    expect(await paths(q('host:*.example.net'))).toEqual(['POST /api/orders']);
    expect(await paths(q('host:API.example.com method:GET'))).toEqual(['GET /api/users/1']);
    expect(await paths(q('tag:team=core'))).toEqual(['POST /api/orders']);
    expect(await paths(q('context:ctx-42'))).toEqual(['POST /api/orders']);
    expect(await paths(q('blocked:true'))).toEqual(['GET /health']);
    expect(await paths(q('endpoint:/api/users/{id}'))).toEqual(['GET /api/users/1']);
    expect(await paths(q('ORDERS status:201'))).toEqual(['POST /api/orders']);
    // Quotes, backslashes and LIKE metacharacters travel as parameter values.
    const quoted = `path:"${odd.replace(/["\\]/g, (c) => `\\${c}`)}"`;
    expect(await paths(q(quoted))).toEqual([`DELETE ${odd}`]);
    expect(await paths(q(`"it's"`))).toEqual([`DELETE ${odd}`]);
    expect(await paths(q(`path:/api/it's*%_`))).toEqual([`DELETE ${odd}`]);
    expect(await paths(q(`path:/api/*_`))).toEqual([`DELETE ${odd}`]);
    expect(await paths(q("'; DROP TABLE requests; --"))).toEqual([]);

    const bad = await a.get(`${reqs}?${q('method:GET bogus:1')}`);
    expect(bad.status).toBe(400);
    expect(details(bad.body)['querystring.q']).toContain('bogus');

    const post = await a.post<View>(views, { name: 'posts', criteria: 'method:POST' });
    expect(await paths(`view=${post.body.sid}`)).toEqual(['POST /api/orders', 'POST /api/orders']);
    expect(await paths(`view=${post.body.sid}&${q('status:5xx')}`)).toEqual(['POST /api/orders']);
    expect(await paths(`view=${post.body.sid}&${q('env:prod01')}&method=POST`)).toEqual(['POST /api/orders']);

    // A view of another bucket or account, or no view at all: 404.
    const b2 = (await a.post<View>(`/v1/accounts/${acct.accountSid}/buckets`, { name: 'b2' })).body.sid;
    const elsewhere = await a.post<View>(`/v1/accounts/${acct.accountSid}/buckets/${b2}/streamViews`, {
      name: 'elsewhere',
      criteria: '',
    });
    expect((await a.get(`${reqs}?view=${elsewhere.body.sid}`)).status).toBe(404);
    expect((await a.get(`${reqs}?view=sv_nope`)).status).toBe(404);
    const other = await newAccount();
    const theirs = await api(other.apiToken).post<View>(
      `/v1/accounts/${other.accountSid}/buckets/${other.bucketSid}/streamViews`,
      { name: 'theirs', criteria: '' },
    );
    expect((await a.get(`${reqs}?view=${theirs.body.sid}`)).status).toBe(404);
  });
});
