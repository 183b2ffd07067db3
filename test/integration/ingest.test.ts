import { describe, expect, it } from 'vitest';
import { api, http, ingest, makeRecord, newAccount, recentDay, testEnv, waitFor } from '../helpers/client.js';

const url = (bucket: string) => `${testEnv().ingestUrl}/v1/buckets/${bucket}/ingest`;

async function storedSids(token: string, accountSid: string, bucketSid: string): Promise<string[]> {
  const res = await api(token).get<{ records: { sid: string }[] }>(
    `/v1/accounts/${accountSid}/buckets/${bucketSid}/requests?limit=100`,
  );
  return res.body.records.map((r) => r.sid);
}

describe('ingest endpoint', () => {
  it('accepts a batch, fills sid/createdAt/receivedAt, marks the bucket connected', async () => {
    const acct = await newAccount();
    const before = await api(acct.apiToken).get(`/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}`);
    expect(before.body.appIsConnected).toBe(false);
    const r = makeRecord();
    delete r.createdAt;
    const res = await ingest(acct.bucketSid, acct.apiToken, [r]);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ accepted: 1, rejected: [] });
    const [rec] = await waitFor(async () => {
      const l = await api(acct.apiToken).get<{ records: Record<string, string>[] }>(
        `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests`,
      );
      return l.body.records.length ? l.body.records : undefined;
    });
    expect(rec!.sid).toMatch(/^req_[A-Za-z0-9]{27}$/);
    expect(rec!.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(rec!.receivedAt).toBe(rec!.createdAt);
    const after = await api(acct.apiToken).get(`/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}`);
    expect(after.body.appIsConnected).toBe(true);
  });

  it('rejects invalid records one by one and keeps the valid ones', async () => {
    const acct = await newAccount();
    const good1 = makeRecord({ contextSid: 'good-1' });
    const good2 = makeRecord({ contextSid: 'good-2' });
    const wrongType = makeRecord({ response: { statusCode: 'two hundred' } });
    const missing = { environmentSid: 'prod01' };
    const extra = makeRecord({ surprise: true });
    const res = await ingest(acct.bucketSid, acct.apiToken, [
      good1,
      wrongType,
      missing,
      good2,
      extra,
      'text',
      null,
    ]);
    expect(res.status).toBe(202);
    expect(res.body.accepted).toBe(2);
    expect(res.body.rejected.map((r) => r.index)).toEqual([1, 2, 4, 5, 6]);
    for (const r of res.body.rejected) expect(r.error.code).toBe('VALIDATION_ERROR');
    const details = (res.body.rejected[0]!.error as unknown as { details: Record<string, string> }).details;
    expect(Object.keys(details)).toContain('response.statusCode');
    const sids = await waitFor(async () => {
      const s = await storedSids(acct.apiToken, acct.accountSid, acct.bucketSid);
      return s.length === 2 ? s : undefined;
    });
    expect(sids).toHaveLength(2);
  });

  it('accepts the redacted mark an SDK sets after redacting in the host, and answers it', async () => {
    const acct = await newAccount();
    const r = makeRecord({ contextSid: 'host-redacted', redacted: true });
    const res = await ingest(acct.bucketSid, acct.apiToken, [r]);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ accepted: 1, rejected: [] });
    const [rec] = await waitFor(async () => {
      const l = await api(acct.apiToken).get<{ records: Record<string, unknown>[] }>(
        `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests`,
      );
      return l.body.records.length ? l.body.records : undefined;
    });
    expect(rec!.contextSid).toBe('host-redacted');
    expect(rec!.redacted).toBe(true);
  });

  it('accepts gzip bodies', async () => {
    const acct = await newAccount();
    const res = await ingest(acct.bucketSid, acct.apiToken, [makeRecord(), makeRecord()], { gzip: true });
    expect(res.status).toBe(202);
    expect(res.body.accepted).toBe(2);
  });

  it('answers 413 beyond 1000 records or 5 MB', async () => {
    const acct = await newAccount();
    const many = Array.from({ length: 1001 }, () => makeRecord());
    const res = await ingest(acct.bucketSid, acct.apiToken, many);
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ success: false, error: { code: 'PAYLOAD_TOO_LARGE' } });
    const big = makeRecord({ request: { method: 'POST', path: '/x', body: 'x'.repeat(5 * 1024 * 1024) } });
    const res2 = await ingest(acct.bucketSid, acct.apiToken, [big]);
    expect(res2.status).toBe(413);
    expect(res2.body).toMatchObject({ success: false, error: { code: 'PAYLOAD_TOO_LARGE' } });
  });

  it('refuses malformed JSON, a missing or bad token and another account’s bucket with the envelope', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const malformed = await http('POST', url(acct.bucketSid), {
      token: acct.apiToken,
      rawBody: '{"records": [',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });

    const noToken = await http('POST', url(acct.bucketSid), { body: { records: [makeRecord()] } });
    expect(noToken.status).toBe(401);
    expect(noToken.body).toMatchObject({ success: false, error: { code: 'INVALID_TOKEN' } });

    const garbage = await http('POST', url(acct.bucketSid), { token: 'at_live_nope', body: { records: [] } });
    expect(garbage.status).toBe(401);

    const foreign = await ingest(other.bucketSid, acct.apiToken, [makeRecord()]);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toMatchObject({ success: false, error: { code: 'RESOURCE_NOT_FOUND' } });

    const notArray = await http('POST', url(acct.bucketSid), {
      token: acct.apiToken,
      body: { records: 'x' },
    });
    expect(notArray.status).toBe(400);
    expect(notArray.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
  });

  it('accepts the existing SDKs’ wire format on POST /', async () => {
    const acct = await newAccount();
    const day = recentDay();
    const call = {
      contextSid: 'sdk-ctx-1',
      direction: 'out',
      request: {
        received: `${day}T10:00:00.000Z`,
        ip: '203.0.113.9',
        url: 'https://shop.example.com:8443/cart/42/items?sort=asc&x=1&x=2',
        method: 'post',
        headers: { 'Content-Type': 'application/json' },
        body: { item: 7 },
      },
      response: {
        headers: { 'content-type': 'application/json' },
        status: 201,
        responseTime: 87.5,
        size: 12,
        body: '{}',
      },
      tags: [{ key: 'team', value: 'checkout' }],
      traces: [{ time: 1, data: 'db' }],
    };
    const res = await http('POST', `${testEnv().ingestUrl}/`, {
      token: acct.apiToken,
      body: call,
      headers: {
        'api-traffic-bucket-sid': acct.bucketSid,
        'api-traffic-sdk': 'node',
        'api-traffic-sdk-version': '1.2.3',
      },
    });
    expect(res.status).toBe(202);
    const [rec] = await waitFor(async () => {
      const l = await api(acct.apiToken).get<{ records: Record<string, unknown>[] }>(
        `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests`,
      );
      return l.body.records.length ? l.body.records : undefined;
    });
    expect(rec).toMatchObject({
      contextSid: 'sdk-ctx-1',
      direction: 'out',
      createdAt: `${day}T10:00:00.000Z`,
      request: {
        host: 'shop.example.com',
        path: '/cart/42/items',
        port: 8443,
        method: 'POST',
        queryString: { sort: 'asc', x: ['1', '2'] },
        body: { item: 7 },
        ip: '203.0.113.9',
      },
      response: { statusCode: 201, size: 12 },
      timings: { duration: 87.5 },
    });
    expect(rec!.tags).toEqual(
      expect.arrayContaining([
        { key: 'team', value: 'checkout' },
        { key: 'sdk', value: 'node/1.2.3' },
      ]),
    );
  });
});

describe('request ids', () => {
  it('answers every response with x-request-id, echoing a well-formed one the client sent', async () => {
    const acct = await newAccount();
    const given = await http('POST', url(acct.bucketSid), {
      token: acct.apiToken,
      body: { records: [makeRecord()] },
      headers: { 'x-request-id': 'client-rq-1' },
    });
    expect(given.status).toBe(202);
    expect(given.headers.get('x-request-id')).toBe('client-rq-1');
    const made = await http('POST', url(acct.bucketSid), { token: acct.apiToken, body: { records: [] } });
    expect(made.headers.get('x-request-id')).toMatch(/^[A-Za-z0-9]{16}$/);
    // Refusals: by a route hook (401), by the router (bad percent-encoding), on the API too.
    const unauth = await http('POST', url(acct.bucketSid), { body: { records: [] } });
    expect(unauth.status).toBe(401);
    expect(unauth.headers.get('x-request-id')).toMatch(/^[A-Za-z0-9]{16}$/);
    const badUrl = await http('GET', `${testEnv().apiUrl}/v1/accounts/%E0%A4%A/buckets`, {
      token: acct.apiToken,
      headers: { 'x-request-id': 'client-rq-2' },
    });
    expect(badUrl.status).toBe(400);
    expect(badUrl.headers.get('x-request-id')).toBe('client-rq-2');
    const missing = await http('GET', `${testEnv().apiUrl}/v1/nothing-here`, { token: acct.apiToken });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('x-request-id')).toMatch(/^[A-Za-z0-9]{16}$/);
  });
});
