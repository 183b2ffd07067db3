import { describe, expect, it } from 'vitest';
import {
  api,
  ingest,
  listAllRequests,
  makeRecord,
  newAccount,
  testPool,
  waitFor,
  type TestAccount,
} from '../helpers/client.js';
import { TEST_RETENTION_DAYS } from '../helpers/stack-mode.js';

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();

function rec(
  ts: number,
  o: { duration?: number; status?: number; path?: string; method?: string; size?: number } = {},
) {
  return makeRecord({
    createdAt: iso(ts),
    request: {
      host: 'api.example.com',
      method: o.method ?? 'GET',
      path: o.path ?? '/items/1',
      size: o.size ?? 100,
    },
    response: { statusCode: o.status ?? 200, size: 1000 },
    timings: { duration: o.duration ?? 10 },
  });
}

async function ingestAll(acct: TestAccount, bucketSid: string, records: unknown[]): Promise<void> {
  const res = await ingest(bucketSid, acct.apiToken, records);
  expect(res.status).toBe(202);
  expect(res.body.accepted).toBe(records.length);
}

function metrics(acct: TestAccount) {
  return <T = Record<string, unknown>>(p: string) =>
    api(acct.apiToken).get<T>(`/v1/accounts/${acct.accountSid}/metrics${p}`);
}

async function untilTotal(acct: TestAccount, query: string, total: number): Promise<void> {
  await waitFor(
    async () =>
      (await metrics(acct)<{ totalRequests: number }>(`/summary?${query}`)).body.totalRequests === total,
    { timeoutMs: 30_000, what: `${total} requests in the metrics` },
  );
}

type Series = { data: { timestamp: string; requestCount: number; errorCount: number }[] };

describe('metrics: range edges and interval alignment', () => {
  it('includes a record at exactly endDate, excludes the next minute, and fills empty intervals with zeros', async () => {
    const acct = await newAccount();
    const T = Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR;
    const E = T + 2 * HOUR + 59 * 60_000; // the endDate: an exact minute
    await ingestAll(acct, acct.bucketSid, [
      rec(T - 1), // the minute before startDate: out
      rec(T), // exactly startDate: in
      rec(T + 30 * 60_000),
      rec(T + 2 * HOUR + 15 * 60_000),
      rec(E), // exactly endDate: in
      rec(E + 30_000), // same minute as endDate: in (minute resolution, documented)
      rec(E + 60_000), // the next minute: out
    ]);
    const m = metrics(acct);
    const q = `startDate=${iso(T)}&endDate=${iso(E)}`;
    await untilTotal(acct, `startDate=${iso(T - HOUR)}&endDate=${iso(E + HOUR)}`, 7);
    const s = await m<{ totalRequests: number; startDate: string; endDate: string }>(`/summary?${q}`);
    expect(s.status).toBe(200);
    expect(s.body.totalRequests).toBe(5);
    expect(s.body.startDate).toBe(iso(T));
    expect(s.body.endDate).toBe(iso(E + 59_999));
    const tp = await m<Series & { interval: string }>(`/throughput?interval=hour&${q}`);
    expect(tp.body.interval).toBe('hour');
    expect(tp.body.data.map((d) => [d.timestamp, d.requestCount])).toEqual([
      [iso(T), 2],
      [iso(T + HOUR), 0],
      [iso(T + 2 * HOUR), 3],
    ]);
    expect(tp.body.data[1]).toEqual({
      timestamp: iso(T + HOUR),
      requestCount: 0,
      errorCount: 0,
      averageResponseTime: 0,
    });
    // interval defaults to hour; the record exactly at a later endDate is counted in its minute.
    const def = await m<Series & { interval: string }>(
      `/throughput?startDate=${iso(T)}&endDate=${iso(E + 60_000)}`,
    );
    expect(def.body.interval).toBe('hour');
    expect(def.body.data.reduce((a, d) => a + d.requestCount, 0)).toBe(6);
  });

  it('defaults to the last 24 hours ending now', async () => {
    const acct = await newAccount();
    const now = Date.now();
    await ingestAll(acct, acct.bucketSid, [rec(now - 60_000), rec(now - 23 * HOUR), rec(now - 25 * HOUR)]);
    await untilTotal(acct, '', 2);
    const s = await metrics(acct)<{ totalRequests: number; startDate: string; endDate: string }>('/summary');
    expect(s.body.totalRequests).toBe(2);
    const end = Date.parse(s.body.endDate);
    expect(Math.abs(end - now)).toBeLessThan(2 * 60_000);
    expect(end + 1 - Date.parse(s.body.startDate)).toBe(DAY + 60_000);
    const tp = await metrics(acct)<Series>('/throughput');
    expect(tp.body.data.length).toBe(25);
    expect(tp.body.data.reduce((a, d) => a + d.requestCount, 0)).toBe(2);
  });

  it('aligns day, week (Monday) and month intervals in UTC across a month boundary', async () => {
    const acct = await newAccount();
    const now = new Date();
    // The most recent month boundary at least 6 hours ago: at most 31 days and 6 hours ago, so the
    // records on both sides of it lie inside the stack's retention (TEST_RETENTION_DAYS) on any day.
    let M = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
    if (now.getTime() - M < 6 * HOUR) M = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1);
    expect(now.getTime() - M + 2 * DAY).toBeLessThan(TEST_RETENTION_DAYS * DAY);
    await ingestAll(acct, acct.bucketSid, [
      rec(M - 1, { status: 500 }), // last millisecond of the previous month
      rec(M), // first millisecond of the month
      rec(M + DAY + 5 * HOUR),
    ]);
    const q = `startDate=${iso(M - 2 * DAY)}&endDate=${iso(M + 2 * DAY)}`;
    await untilTotal(acct, q, 3);
    const m = metrics(acct);
    const day = await m<Series>(`/throughput?interval=day&${q}`);
    expect(day.body.data.map((d) => [d.timestamp, d.requestCount, d.errorCount])).toEqual([
      [iso(M - 2 * DAY), 0, 0],
      [iso(M - DAY), 1, 1],
      [iso(M), 1, 0],
      [iso(M + DAY), 1, 0],
      [iso(M + 2 * DAY), 0, 0],
    ]);
    const month = await m<Series>(`/throughput?interval=month&${q}`);
    const prevMonth = new Date(M - 1);
    expect(month.body.data.map((d) => [d.timestamp, d.requestCount])).toEqual([
      [iso(Date.UTC(prevMonth.getUTCFullYear(), prevMonth.getUTCMonth(), 1)), 1],
      [iso(M), 2],
    ]);
    const week = await m<Series>(`/throughput?interval=week&${q}`);
    for (const d of week.body.data) {
      const t = new Date(d.timestamp);
      expect(t.getUTCDay(), d.timestamp).toBe(1);
      expect(t.getTime() % DAY).toBe(0);
    }
    const mondayOf = (ms: number) => {
      const d = new Date(ms);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
    };
    const expectedWeeks = new Map<number, number>();
    for (let t = mondayOf(M - 2 * DAY); t <= M + 2 * DAY; t += 7 * DAY) expectedWeeks.set(t, 0);
    for (const ts of [M - 1, M, M + DAY + 5 * HOUR])
      expectedWeeks.set(mondayOf(ts), expectedWeeks.get(mondayOf(ts))! + 1);
    expect(week.body.data.map((d) => [d.timestamp, d.requestCount])).toEqual(
      [...expectedWeeks].map(([t, c]) => [iso(t), c]),
    );
    // Shape A periods are clipped to the range; averages are per minute of the clipped period.
    const a = await m<{
      periods: { startTime: string; endTime: string; total: { count: number; average: number } }[];
    }>(`/shapeA/throughput?interval=day&startDate=${iso(M - 12 * HOUR)}&endDate=${iso(M + 12 * HOUR - 1)}`);
    expect(a.body.periods.map((p) => [p.startTime, p.endTime, p.total.count])).toEqual([
      [iso(M - 12 * HOUR), iso(M), 1],
      [iso(M), iso(M + 12 * HOUR), 1],
    ]);
    expect(a.body.periods[0]!.total.average).toBeCloseTo(1 / (12 * 60), 12);
  });
});

describe('metrics: parameters', () => {
  it('answers 400 VALIDATION_ERROR naming the field for bad parameters', async () => {
    const acct = await newAccount();
    const m = metrics(acct);
    const cases: [string, string][] = [
      ['/throughput?interval=year', 'interval'],
      ['/performance?groupBy=country', 'groupBy'],
      ['/summary?startDate=2026-11-10T00:00:00Z&endDate=2026-11-09T00:00:00Z', 'startDate'],
      ['/summary?startDate=yesterday', 'startDate'],
      ['/errors?endDate=2026-13-45T00:00:00Z', 'endDate'],
      ['/summary?startDate=2026-11-10T00:00:00', 'startDate'],
      [`/throughput?interval=minute&startDate=${iso(Date.now() - 3 * DAY)}`, 'interval'],
      [`/shapeA/responseTime?interval=hour&startDate=${iso(Date.now() - 200 * DAY)}`, 'interval'],
      ['/errors?statusCode=abc', 'statusCode'],
      ['/errors?statusCode=99', 'statusCode'],
      ['/summary?environmentSid=not-an-env', 'environmentSid'],
      ['/performance?limit=0', 'limit'],
      ['/shapeA/throughput?averageUnits=rph', 'averageUnits'],
    ];
    for (const [path, field] of cases) {
      const res = await m<{ success: boolean; error: { code: string; details: Record<string, string> } }>(
        path,
      );
      expect(res.status, path).toBe(400);
      expect(res.body.error.code, path).toBe('VALIDATION_ERROR');
      expect(Object.keys(res.body.error.details).join(' '), path).toContain(field);
    }
  });

  it('hides other accounts: their bucketSid, their account path and unknown buckets are 404', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const m = metrics(acct);
    for (const path of [
      `/summary?bucketSid=${other.bucketSid}`,
      `/throughput?bucketSid=${other.bucketSid}`,
      `/performance?bucketSid=bkt_doesnotexist`,
      `/shapeA/summary?bucketSid=${other.bucketSid}`,
    ]) {
      const res = await m<{ error: { code: string } }>(path);
      expect(res.status, path).toBe(404);
      expect(res.body.error.code).toBe('RESOURCE_NOT_FOUND');
    }
    const cross = await api(acct.apiToken).get(`/v1/accounts/${other.accountSid}/metrics/summary`);
    expect(cross.status).toBe(404);
    expect((await api().get(`/v1/accounts/${acct.accountSid}/metrics/summary`)).status).toBe(401);
  });
});

describe('metrics: deletion', () => {
  it('deleting a request removes it from counts, bytes, durations and percentiles; deleting a bucket leaves nothing', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const b2 = (await a.post<{ sid: string }>(`/v1/accounts/${acct.accountSid}/buckets`, { name: 'second' }))
      .body.sid;
    const T = Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR + 7 * 60_000;
    await ingestAll(acct, acct.bucketSid, [
      rec(T, { duration: 10 }),
      rec(T + 1000, { duration: 20 }),
      rec(T + 2000, { duration: 30, status: 500 }),
      rec(T + 3000, { duration: 40 }),
      rec(T + 4000, { duration: 1000, status: 404, path: '/slow/1', size: 5000 }),
    ]);
    await ingestAll(acct, b2, [rec(T + 5000, { duration: 15 }), rec(T + 6000, { duration: 25 })]);
    const q = `startDate=${iso(T - HOUR)}&endDate=${iso(T + HOUR)}`;
    await untilTotal(acct, q, 7);
    const m = metrics(acct);
    type RT = {
      summary: { requests: number; maximum: number; percentiles: Record<string, { value: number }> };
    };
    const before = await m<RT>(`/shapeA/responseTime?${q}`);
    expect(before.body.summary.percentiles['99']!.value).toBeCloseTo(1000, -1);
    const s0 = await m<{ totalDataTransferred: number }>(`/summary?${q}`);

    const slow = (await listAllRequests(acct.apiToken, acct.accountSid, acct.bucketSid, 'path=/slow/1'))[0]!;
    const del = await a.delete(
      `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests/${slow.sid as string}`,
    );
    expect(del.status).toBe(200);
    const s1 = await m<{
      totalRequests: number;
      totalErrors: number;
      totalDataTransferred: number;
      averageResponseTime: number;
      requestsByStatus: Record<string, number>;
      topEndpoints: { path: string }[];
    }>(`/summary?${q}`);
    expect(s1.body.totalRequests).toBe(6);
    expect(s1.body.totalErrors).toBe(1);
    expect(s1.body.totalDataTransferred).toBe(s0.body.totalDataTransferred - 6000);
    expect(s1.body.averageResponseTime).toBeCloseTo((10 + 20 + 30 + 40 + 15 + 25) / 6, 3);
    expect(s1.body.requestsByStatus).toEqual({ '2xx': 5, '5xx': 1 });
    expect(s1.body.topEndpoints.map((e) => e.path)).toEqual(['/items/{id}']);
    // The digest forgets the deleted duration: p99 of [10, 15, 20, 25, 30, 40] is 40.
    const after = await m<RT>(`/shapeA/responseTime?${q}`);
    expect(after.body.summary.requests).toBe(6);
    expect(after.body.summary.percentiles['99']!.value).toBeCloseTo(40, 0);
    const errs = await m<{ errorsByStatus: Record<string, number> }>(`/errors?${q}`);
    expect(errs.body.errorsByStatus).toEqual({ '500': 1 });
    const perf = await m<{ metrics: { group: string; requestCount: number; p99ResponseTime: number }[] }>(
      `/performance?groupBy=status&${q}`,
    );
    expect(perf.body.metrics.map((x) => [x.group, x.requestCount])).toEqual([
      ['200', 5],
      ['500', 1],
    ]);
    // Deleting it again is a 404 and changes nothing.
    const again = await a.delete(
      `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests/${slow.sid as string}`,
    );
    expect(again.status).toBe(404);
    expect((await m<{ totalRequests: number }>(`/summary?${q}`)).body.totalRequests).toBe(6);

    // A deleted bucket leaves nothing: its bucketSid is a 404 and the account totals lose it.
    expect((await m(`/summary?bucketSid=${b2}&${q}`)).status).toBe(200);
    expect((await a.delete(`/v1/accounts/${acct.accountSid}/buckets/${b2}`)).status).toBe(200);
    expect((await m(`/summary?bucketSid=${b2}&${q}`)).status).toBe(404);
    const s2 = await m<{ totalRequests: number; averageResponseTime: number }>(`/summary?${q}`);
    expect(s2.body.totalRequests).toBe(4);
    expect(s2.body.averageResponseTime).toBeCloseTo(25, 3);
    const env = await m<{ metrics: { group: string; requestCount: number }[] }>(
      `/performance?groupBy=environment&${q}`,
    );
    expect(env.body.metrics).toEqual([expect.objectContaining({ group: 'prod01', requestCount: 4 })]);
  });
});

describe('metrics: Shape A and event markers', () => {
  it('compares the summary with the preceding period of equal length', async () => {
    const acct = await newAccount();
    const T = Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR;
    await ingestAll(acct, acct.bucketSid, [
      rec(T - 50 * 60_000, { duration: 50 }),
      rec(T - 1, { duration: 50 }),
      rec(T, { duration: 10 }),
      rec(T + 10 * 60_000, { duration: 20, status: 503 }),
      rec(T + 20 * 60_000, { duration: 30 }),
      rec(T + 59 * 60_000, { duration: 40 }),
    ]);
    await untilTotal(acct, `startDate=${iso(T - HOUR)}&endDate=${iso(T + HOUR)}`, 6);
    const res = await metrics(acct)<Record<string, unknown>>(
      `/shapeA/summary?startDate=${iso(T)}&endDate=${iso(T + 59 * 60_000)}`,
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      previousStartDate: iso(T - HOUR),
      previousEndDate: iso(T - 1),
      requests: {
        current: { amount: 4, units: 'requests' },
        previous: { amount: 2, units: 'requests' },
        change: { amount: 100, units: 'percent' },
      },
      responseTime: {
        current: { amount: 25, units: 'milliseconds' },
        previous: { amount: 50, units: 'milliseconds' },
        change: { amount: -25, units: 'milliseconds' },
      },
      errors: { current: { amount: 1 }, previous: { amount: 0 }, change: { amount: null, units: 'percent' } },
      blocked: { current: { amount: 0 }, previous: { amount: 0 }, change: { amount: null } },
    });
  });

  it('returns the event markers in range beside the throughput and response-time series', async () => {
    const acct = await newAccount();
    const a = api(acct.apiToken);
    const b2 = (await a.post<{ sid: string }>(`/v1/accounts/${acct.accountSid}/buckets`, { name: 'other' }))
      .body.sid;
    const T = Math.floor(Date.now() / HOUR) * HOUR - 4 * HOUR;
    const insert = (
      sid: string,
      name: string,
      bucketSids: string[],
      start: number,
      end: number | null,
      envs = ['*'],
    ) =>
      testPool().query(
        `INSERT INTO events (sid, account_sid, bucket_sids, environment_sids, type, name, source, metadata, started_at, ended_at)
         VALUES ($1, $2, $3, $4, 'deployment', $5, 'ci', $6, $7, $8)`,
        [
          sid,
          acct.accountSid,
          bucketSids,
          envs,
          name,
          { version: name },
          new Date(start),
          end ? new Date(end) : null,
        ],
      );
    await insert('evt_metrics_all_buckets_000001', 'everywhere', ['*'], T + HOUR, null);
    await insert('evt_metrics_this_bucket_000002', 'this bucket', [acct.bucketSid], T + 2 * HOUR, null);
    await insert('evt_metrics_other_bucket_00003', 'other bucket', [b2], T + 2 * HOUR, null);
    await insert('evt_metrics_long_incident_0004', 'overlapping', ['*'], T - DAY, T + 30 * 60_000);
    await insert('evt_metrics_too_early_0000005', 'too early', ['*'], T - DAY, T - HOUR);
    await insert('evt_metrics_other_env_0000006', 'other env', ['*'], T + HOUR, null, ['stag01']);
    const q = `startDate=${iso(T)}&endDate=${iso(T + 3 * HOUR)}`;
    const m = metrics(acct);
    const tp = await m<{
      events: { sid: string; name: string; startedAt: string; endedAt: string | null }[];
    }>(`/throughput?bucketSid=${acct.bucketSid}&environmentSid=prod01&${q}`);
    expect(tp.status).toBe(200);
    expect(tp.body.events.map((e) => e.name)).toEqual(['overlapping', 'everywhere', 'this bucket']);
    expect(tp.body.events[1]).toMatchObject({
      sid: 'evt_metrics_all_buckets_000001',
      type: 'deployment',
      source: 'ci',
      metadata: { version: 'everywhere' },
      bucketSids: ['*'],
      startedAt: iso(T + HOUR),
      endedAt: null,
    });
    const rt = await m<{ events: { name: string }[] }>(`/shapeA/responseTime?${q}`);
    expect(rt.body.events.map((e) => e.name)).toEqual([
      'overlapping',
      'everywhere',
      'other env',
      'other bucket',
      'this bucket',
    ]);
    const at = await m<{ events: { name: string }[] }>(`/shapeA/throughput?bucketSid=${b2}&${q}`);
    expect(at.body.events.map((e) => e.name).sort()).toEqual([
      'everywhere',
      'other bucket',
      'other env',
      'overlapping',
    ]);
  });
});
