import { describe, expect, it } from 'vitest';
import { api, ingest, makeRecord, newAccount, recentDay, waitFor } from '../helpers/client.js';

describe('buckets', () => {
  it('creates, lists, gets, updates and deletes a bucket', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const created = await a.post(`/v1/accounts/${acct.accountSid}/buckets`, { name: 'payments' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      accountSid: acct.accountSid,
      name: 'payments',
      verifySslCerts: true,
      appIsConnected: false,
    });
    const sid = created.body.sid as string;
    const list = await a.get<{ hasMore: boolean; records: { sid: string }[] }>(
      `/v1/accounts/${acct.accountSid}/buckets?limit=1&sort=name&order=desc`,
    );
    expect(list.status).toBe(200);
    expect(list.body.hasMore).toBe(true);
    expect(list.body.records).toHaveLength(1);
    const upd = await a.put(`/v1/accounts/${acct.accountSid}/buckets/${sid}`, {
      name: 'pay',
      verifySslCerts: false,
    });
    expect(upd.status).toBe(200);
    expect(upd.body).toMatchObject({ name: 'pay', verifySslCerts: false });
    const bad = await a.put(`/v1/accounts/${acct.accountSid}/buckets/${sid}`, { name: 'pay' });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
    expect(Object.keys((bad.body.error as { details: object }).details)).toContain('body.verifySslCerts');
    const del = await a.delete(`/v1/accounts/${acct.accountSid}/buckets/${sid}`);
    expect(del.body).toEqual({ sid, deleted: true });
    expect((await a.get(`/v1/accounts/${acct.accountSid}/buckets/${sid}`)).status).toBe(404);
  });

  it('hides another account’s buckets behind 404 and refuses missing tokens', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const res = await api(acct.apiToken).get(`/v1/accounts/${other.accountSid}/buckets/${other.bucketSid}`);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ success: false, error: { code: 'RESOURCE_NOT_FOUND' } });
    const res2 = await api(acct.apiToken).get(`/v1/accounts/${acct.accountSid}/buckets/${other.bucketSid}`);
    expect(res2.status).toBe(404);
    const none = await api().get(`/v1/accounts/${acct.accountSid}/buckets`);
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ success: false, error: { code: 'INVALID_TOKEN' } });
  });
});

describe('requests', () => {
  it('answers the nullable fields a client left out as null, in the list and in a get (docs/processing.md)', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const sent = await ingest(acct.bucketSid, acct.apiToken, [{ request: { method: 'GET' } }]);
    expect(sent.status, sent.text).toBe(202);
    const list = `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests`;
    const stored = await waitFor(async () => {
      const r = await a.get<{ records: Record<string, unknown>[] }>(list);
      return r.body.records[0];
    });
    const expected = {
      environmentSid: null,
      contextSid: null,
      response: null,
      timings: null,
      traces: null,
      note: null,
      workflowExecutions: null,
      request: {
        method: 'GET',
        host: null,
        path: null,
        port: null,
        url: null,
        contentType: null,
        size: null,
        queryString: {},
        headers: {},
      },
    };
    expect(stored).toMatchObject(expected);
    const one = await a.get<Record<string, unknown>>(`${list}/${stored.sid as string}`);
    expect(one.body).toMatchObject(expected);
  });

  it('filters, gets, notes and deletes requests; deleting the bucket deletes them all', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests`;
    const day = recentDay();
    const t = Date.parse(`${day}T12:00:00.000Z`);
    const records = [
      makeRecord({ createdAt: new Date(t).toISOString(), request: { method: 'GET', path: '/a/1' } }),
      makeRecord({
        createdAt: new Date(t + 60_000).toISOString(),
        request: { method: 'POST', path: '/a/2' },
        response: { statusCode: 500 },
      }),
      makeRecord({
        createdAt: new Date(t + 120_000).toISOString(),
        request: { method: 'GET', path: '/b/3' },
      }),
    ];
    expect((await ingest(acct.bucketSid, acct.apiToken, records)).status).toBe(202);
    await waitFor(async () =>
      (await a.get<{ records: unknown[] }>(base)).body.records.length === 3 ? true : undefined,
    );

    const byMethod = await a.get<{ records: { request: { method: string } }[] }>(`${base}?method=POST`);
    expect(byMethod.body.records.map((r) => r.request.method)).toEqual(['POST']);
    const byStatus = await a.get<{ records: unknown[] }>(`${base}?statusCode=500`);
    expect(byStatus.body.records).toHaveLength(1);
    const byPath = await a.get<{ records: { request: { path: string } }[] }>(`${base}?path=/a/*&order=asc`);
    expect(byPath.body.records.map((r) => r.request.path)).toEqual(['/a/1', '/a/2']);
    const byRange = await a.get<{ records: unknown[] }>(
      `${base}?startDate=${day}T12:01:00.000Z&endDate=${day}T12:02:00.000Z`,
    );
    expect(byRange.body.records).toHaveLength(2);
    const badRange = await a.get(
      `${base}?startDate=2026-11-21T00:00:00.000Z&endDate=2026-11-20T00:00:00.000Z`,
    );
    expect(badRange.status).toBe(400);
    const badLimit = await a.get(`${base}?limit=1000`);
    expect(badLimit.status).toBe(400);

    const list = await a.get<{ records: { sid: string }[] }>(base);
    const sid = list.body.records[0]!.sid;
    const one = await a.get(`${base}/${sid}`);
    expect(one.status).toBe(200);
    expect(one.body.sid).toBe(sid);
    const noted = await a.put(`${base}/${sid}`, { note: 'looked into it' });
    expect(noted.status).toBe(200);
    expect(noted.body.note).toBe('looked into it');
    expect((await a.get(`${base}/${sid}`)).body.note).toBe('looked into it');
    const del = await a.delete(`${base}/${sid}`);
    expect(del.body).toEqual({ sid, deleted: true });
    expect((await a.get(`${base}/${sid}`)).status).toBe(404);
    expect((await a.get<{ records: unknown[] }>(base)).body.records).toHaveLength(2);

    expect((await a.get(`${base}/req_doesnotexist`)).status).toBe(404);
    const other = await newAccount();
    expect((await api(other.apiToken).get(`${base}/${list.body.records[1]!.sid}`)).status).toBe(404);

    const bucketDel = await a.delete(`/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}`);
    expect(bucketDel.status).toBe(200);
    // The bucket is gone; that its ClickHouse rows are gone too is checked by the metrics tests.
    expect((await a.get(base)).status).toBe(404);
  });
});
