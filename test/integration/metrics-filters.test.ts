import { describe, expect, it } from 'vitest';
import { api, ingest, makeRecord, newAccount, waitFor } from '../helpers/client.js';

type Throughput = { summary: { total: { count: number }; httpStatus: Record<string, { count: number }> } };
type ResponseTime = { summary: { requests: number; percentiles?: Record<string, { value: number | null }> } };
type Performance = { metrics: { group: string; requestCount: number }[] };

describe('metrics narrowed to one endpoint and/or method', () => {
  it('counts and percentiles of only the matching requests', async () => {
    const acct = await newAccount();
    const rec = (method: string, path: string, status: number, duration: number) =>
      makeRecord({
        request: { method, path, host: 'api.example.com' },
        response: { statusCode: status },
        timings: { duration },
      });
    const res = await ingest(acct.bucketSid, acct.apiToken, [
      rec('GET', '/alpha', 200, 10),
      rec('GET', '/alpha', 500, 30),
      rec('POST', '/alpha', 201, 20),
      rec('GET', '/beta', 200, 40),
    ]);
    expect(res.status).toBe(202);
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/metrics`;
    const q = (extra: string) => `bucketSid=${acct.bucketSid}&interval=minute&${extra}`;
    await waitFor(
      async () =>
        (await a.get<Throughput>(`${base}/shapeA/throughput?${q('')}`)).body.summary?.total.count === 4,
      { what: 'four stored requests' },
    );
    const total = async (extra: string) =>
      (await a.get<Throughput>(`${base}/shapeA/throughput?${q(extra)}`)).body.summary.total.count;
    expect(await total('endpoint=/alpha')).toBe(3);
    expect(await total('method=GET')).toBe(3);
    expect(await total('method=get&endpoint=/alpha')).toBe(2);
    expect(await total('method=POST&endpoint=/alpha')).toBe(1);
    expect(await total('endpoint=/nowhere')).toBe(0);
    const alpha = await a.get<Throughput>(`${base}/shapeA/throughput?${q('endpoint=/alpha')}`);
    expect(alpha.body.summary.httpStatus['500']!.count).toBe(1);

    const rt = await a.get<ResponseTime>(`${base}/shapeA/responseTime?${q('endpoint=/beta')}`);
    expect(rt.body.summary.requests).toBe(1);
    expect(rt.body.summary.percentiles?.['50']?.value).toBeCloseTo(40, 0);

    const perf = await a.get<Performance>(
      `${base}/performance?bucketSid=${acct.bucketSid}&groupBy=endpoint&method=GET`,
    );
    const counts = Object.fromEntries(perf.body.metrics.map((m) => [m.group, m.requestCount]));
    expect(counts).toEqual({ '/alpha': 2, '/beta': 1 });

    const bad = await a.get<{ error: { code: string; details: Record<string, string> } }>(
      `${base}/shapeA/throughput?method=${encodeURIComponent('GET;DROP')}`,
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('VALIDATION_ERROR');
  });

  it('answers an empty range narrowed to an endpoint and method with empty figures, not an error', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const base = `/v1/accounts/${acct.accountSid}/metrics`;
    // startDate = endDate: no block of the range is read; the rollups lack endpoint and method.
    const q = `bucketSid=${acct.bucketSid}&endpoint=/x&method=GET&startDate=2000-01-01T00:00:00Z&endDate=2000-01-01T00:00:00Z`;
    for (const p of [
      `performance?${q}&groupBy=endpoint`,
      `shapeA/responseTime?${q}&interval=minute`,
      `summary?${q}`,
      `throughput?${q}`,
      `errors?${q}`,
    ]) {
      const r = await a.get(`${base}/${p}`);
      expect(r.status, `${p}: ${JSON.stringify(r.body)}`).toBe(200);
    }
  });
});
