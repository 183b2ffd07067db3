import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { api, ingest, makeRecord, newAccount, waitFor, type TestAccount } from '../helpers/client.js';
import { startReceiver } from '../helpers/http-receiver.js';
import { mcpToken } from '../helpers/scoped-token.js';
import { callTool } from '../helpers/mcp-call.js';

/**
 * SLOs end to end (docs/slos.md): CRUD, the status of both SLI kinds against figures computed
 * here from the records sent (backfilled with past createdAt through the real pipeline), and the
 * `slo_burn` trigger firing once per breach and resolving after recovery. The service evaluates
 * scheduler triggers every 2 s (test/helpers/global-setup.ts).
 */

const ENV = 'prod01';
const MIN = 60_000;

interface Status {
  sli: number | null;
  objective: number;
  events: { total: number; good: number; bad: number };
  errorBudget: { total: number; consumed: number; remaining: number; remainingPercent: number };
  burnRates: Record<'5m' | '30m' | '1h' | '6h' | '3d', number | null>;
  status: string;
  daily: { day: string; total: number; good: number; bad: number; sli: number | null }[];
}

const slosPath = (acct: TestAccount) => `/v1/accounts/${acct.accountSid}/slos`;

async function createSlo(acct: TestAccount, body: Record<string, unknown>): Promise<string> {
  const res = await api(acct.apiToken).post<{ sid: string }>(slosPath(acct), {
    name: `slo ${randomBytes(3).toString('hex')}`,
    bucketSid: acct.bucketSid,
    windowDays: 7,
    ...body,
  });
  expect(res.status, res.text).toBe(201);
  return res.body.sid;
}

async function send(acct: TestAccount, records: Record<string, unknown>[]): Promise<void> {
  for (let i = 0; i < records.length; i += 500) {
    const res = await ingest(acct.bucketSid, acct.apiToken, records.slice(i, i + 500));
    expect(res.status, res.text).toBe(202);
  }
}

/** `n` records at `at` answering `status` in `ms`. */
function records(n: number, at: number, status: number, ms = 20, env = ENV): Record<string, unknown>[] {
  return Array.from({ length: n }, () =>
    makeRecord({
      environmentSid: env,
      createdAt: new Date(at).toISOString(),
      response: { statusCode: status, headers: {}, size: 10 },
      timings: { duration: ms },
    }),
  );
}

async function statusOnce(acct: TestAccount, sid: string, total: number): Promise<Status> {
  return waitFor(
    async () => {
      const res = await api(acct.apiToken).get<Status>(`${slosPath(acct)}/${sid}/status`);
      expect(res.status, res.text).toBe(200);
      return res.body.events.total === total ? res.body : undefined;
    },
    { timeoutMs: 40_000, what: `${total} events in the SLO status` },
  );
}

const day = (t: number) => new Date(t).toISOString().slice(0, 10);

describe('SLOs', () => {
  it('creates, lists, replaces and deletes an SLO, and refuses bad definitions with a 400', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const sid = await createSlo(acct, {
      name: 'checkout latency',
      endpoint: '/checkout',
      method: 'POST',
      sli: { kind: 'latency', thresholdMs: 300 },
      objective: 99.5,
    });
    expect(sid).toMatch(/^slo_/);
    const got = await api(acct.apiToken).get(`${slosPath(acct)}/${sid}`);
    expect(got.body).toMatchObject({
      sid,
      accountSid: acct.accountSid,
      name: 'checkout latency',
      bucketSid: acct.bucketSid,
      environmentSid: null,
      endpoint: '/checkout',
      method: 'POST',
      sli: { kind: 'latency', thresholdMs: 300 },
      objective: 99.5,
      windowDays: 7,
      updatedAt: null,
    });
    const list = await api(acct.apiToken).get<{ records: { sid: string }[] }>(slosPath(acct));
    expect(list.body.records.map((r) => r.sid)).toEqual([sid]);

    const put = await api(acct.apiToken).put(`${slosPath(acct)}/${sid}`, {
      name: 'availability',
      bucketSid: acct.bucketSid,
      environmentSid: ENV,
      sli: { kind: 'availability' },
      objective: 99.9,
      windowDays: 30,
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({
      sli: { kind: 'availability' },
      endpoint: null,
      environmentSid: ENV,
      windowDays: 30,
    });

    // Another account sees nothing of it; its bucket cannot be named.
    expect((await api(other.apiToken).get(`${slosPath(other)}/${sid}`)).status).toBe(404);
    const foreign = await api(acct.apiToken).post(slosPath(acct), {
      name: 'x',
      bucketSid: other.bucketSid,
      sli: { kind: 'availability' },
      objective: 99,
      windowDays: 7,
    });
    expect(foreign.status).toBe(400);
    expect(foreign.body).toMatchObject({
      success: false,
      error: { code: 'VALIDATION_ERROR', details: { 'body.bucketSid': 'is not a bucket of this account' } },
    });
    for (const bad of [
      { objective: 100 },
      { windowDays: 14 },
      { sli: { kind: 'latency' } },
      { sli: { kind: 'availability', thresholdMs: 5 } },
    ]) {
      const res = await api(acct.apiToken).post(slosPath(acct), {
        name: 'x',
        bucketSid: acct.bucketSid,
        sli: { kind: 'availability' },
        objective: 99,
        windowDays: 7,
        ...bad,
      });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect((res.body as { error: { code: string } }).error.code).toBe('VALIDATION_ERROR');
    }

    const del = await api(acct.apiToken).delete(`${slosPath(acct)}/${sid}`);
    expect(del.body).toEqual({ sid, deleted: true });
    expect((await api(acct.apiToken).get(`${slosPath(acct)}/${sid}`)).status).toBe(404);
  });

  it('answers an availability SLO status with the figures of the records sent', async () => {
    const acct = await newAccount();
    const now = Date.now();
    const earlier = now - 2 * 60 * MIN;
    const recent = now - MIN;
    await send(acct, [
      // 2 h ago: 180 answers, 4 of them 5xx (a 404 is a good answer)
      ...records(170, earlier, 200),
      ...records(6, earlier, 404),
      ...records(4, earlier, 503),
      // a minute ago: 20 answers, 2 of them 5xx
      ...records(18, recent, 200),
      ...records(2, recent, 500),
      // another environment, all 5xx: not this SLO's
      ...records(10, recent, 500, 20, 'stag01'),
    ]);
    const sid = await createSlo(acct, { environmentSid: ENV, sli: { kind: 'availability' }, objective: 99 });
    const s = await statusOnce(acct, sid, 200);

    // 6 bad of 200; the objective allows 1% = 2.
    expect(s.events).toEqual({ total: 200, good: 194, bad: 6 });
    expect(s.sli).toBeCloseTo(97, 6);
    expect(s.errorBudget).toEqual({ total: 2, consumed: 6, remaining: -4, remainingPercent: -200 });
    // burn rate = bad fraction / 1%: 2/20 over the last 5 min … 1 h, 6/200 over 6 h and 3 d
    expect(s.burnRates).toEqual({ '5m': 10, '30m': 10, '1h': 10, '6h': 3, '3d': 3 });
    expect(s.status).toBe('breaching');
    expect(s.daily).toHaveLength(7);
    expect(s.daily.at(-1)!.day).toBe(day(now));
    const byDay = new Map<string, { total: number; bad: number }>();
    for (const [t, total, bad] of [
      [earlier, 180, 4],
      [recent, 20, 2],
    ] as const) {
      const d = byDay.get(day(t)) ?? { total: 0, bad: 0 };
      byDay.set(day(t), { total: d.total + total, bad: d.bad + bad });
    }
    for (const d of s.daily) {
      const want = byDay.get(d.day) ?? { total: 0, bad: 0 };
      expect({ total: d.total, bad: d.bad }, d.day).toEqual(want);
    }

    // MCP: list_slos and get_slo_status answer the same SLO and figures.
    const { token } = await mcpToken(acct, ENV);
    const listed = (await callTool(token, 'list_slos')) as { records: { sid: string }[] };
    expect(listed.records.map((r) => r.sid)).toEqual([sid]);
    const viaMcp = (await callTool(token, 'get_slo_status', { sloSid: sid })) as Status;
    expect({ ...viaMcp.events, sli: viaMcp.sli, burn: viaMcp.burnRates }).toEqual({
      ...s.events,
      sli: s.sli,
      burn: s.burnRates,
    });
  });

  it('answers a latency SLO status: calls over the threshold are bad, calls without a matching endpoint do not count', async () => {
    const acct = await newAccount();
    const at = Date.now() - MIN;
    const slow = (n: number, ms: number) =>
      Array.from({ length: n }, () => ({
        ...records(1, at, 200, ms)[0]!,
        request: {
          method: 'POST',
          path: '/checkout',
          url: 'https://api.example.com/checkout',
          headers: {},
          size: 0,
        },
      }));
    await send(acct, [
      ...slow(30, 50),
      ...slow(10, 150),
      ...slow(10, 199),
      ...slow(5, 201),
      ...slow(3, 300),
      ...slow(2, 1000),
      // another endpoint, all slow: not counted
      ...records(10, at, 200, 5000),
    ]);
    const sid = await createSlo(acct, {
      endpoint: '/checkout',
      method: 'POST',
      sli: { kind: 'latency', thresholdMs: 200 },
      objective: 90,
    });
    const s = await statusOnce(acct, sid, 60);
    // 10 of 60 calls slower than 200 ms; the objective allows 10% = 6.
    expect(s.events).toEqual({ total: 60, good: 50, bad: 10 });
    expect(s.sli).toBeCloseTo((100 * 50) / 60, 3);
    expect(s.errorBudget.total).toBeCloseTo(6, 6);
    expect(s.errorBudget.consumed).toBe(10);
    expect(s.errorBudget.remaining).toBeCloseTo(-4, 6);
    expect(s.burnRates['5m']).toBeCloseTo(10 / 60 / 0.1, 3);
    expect(s.burnRates['3d']).toBeCloseTo(10 / 60 / 0.1, 3);
    expect(s.status).toBe('breaching');
  });

  it('fires slo_burn once when the fast burn rate is crossed, and resolved after recovery', async () => {
    const acct = await newAccount();
    const rx = await startReceiver();
    try {
      const sloSid = await createSlo(acct, { sli: { kind: 'availability' }, objective: 99 });
      const wfPath = `/v1/accounts/${acct.accountSid}/environments/${ENV}/buckets/${acct.bucketSid}/workflows`;
      const unknown = await api(acct.apiToken).post(wfPath, {
        name: 'burn',
        trigger: { type: 'slo_burn', sloSid: 'slo_nope' },
        actions: [{ type: 'webhook', config: { url: `${rx.url}/hook` } }],
      });
      expect(unknown.status).toBe(400);
      expect(unknown.body).toMatchObject({
        error: {
          code: 'VALIDATION_ERROR',
          details: { 'body.trigger.sloSid': 'is not an SLO of this account' },
        },
      });

      const wf = await api(acct.apiToken).post<{ sid: string; trigger: unknown }>(wfPath, {
        name: 'fast burn',
        trigger: {
          type: 'slo_burn',
          sloSid,
          conditions: [{ burnRate: 14.4, longWindow: '1h', shortWindow: '5m' }],
        },
        actions: [
          { type: 'slack', config: { webhook_url: `${rx.url}/slack` } },
          {
            type: 'webhook',
            config: {
              url: `${rx.url}/hook`,
              body: {
                type: '{{trigger.type}}',
                message: '{{trigger.message}}',
                rate: '{{slo.burnRate}}',
                slo: '{{slo.sid}}',
              },
            },
          },
        ],
      });
      expect(wf.status, wf.text).toBe(201);
      expect(wf.body.trigger).toEqual({
        type: 'slo_burn',
        sloSid,
        conditions: [{ severity: 'page', burnRate: 14.4, longWindow: '1h', shortWindow: '5m' }],
      });

      // 20 of 100 answers 5xx: burn rate 20 over 5 min and 1 h, above 14.4.
      await send(acct, [...records(80, Date.now() - 1000, 200), ...records(20, Date.now() - 1000, 500)]);
      await waitFor(() => rx.callsTo('/hook').length > 0, { timeoutMs: 40_000, what: 'the slo_burn fire' });
      expect(rx.callsTo('/hook')[0]!.json).toEqual({
        type: 'slo_burn',
        message: expect.stringMatching(/^SLO .+: burn rate 20 over 1h and 20 over 5m \(page at 14\.4\)$/),
        rate: '20',
        slo: sloSid,
      });
      expect((rx.callsTo('/slack')[0]!.json as { text: string }).text).toMatch(/^Firing: fast burn: SLO /);

      // Still burning over several evaluations: no second fire.
      await new Promise((r) => setTimeout(r, 8000));
      expect(rx.callsTo('/hook')).toHaveLength(1);
      expect(rx.callsTo('/slack')).toHaveLength(1);

      // 1,000 good answers: 20 of 1,100 = burn rate 1.8, below 14.4 — recovered.
      await send(acct, records(1000, Date.now() - 1000, 200));
      await waitFor(() => rx.callsTo('/slack').length >= 2, { timeoutMs: 40_000, what: 'the resolve' });
      expect((rx.callsTo('/slack')[1]!.json as { text: string }).text).toMatch(
        /^Resolved: fast burn: resolved: SLO .+: burn rate 1\.818 over 1h and 1\.818 over 5m \(page at 14\.4\)$/,
      );
      // The generic webhook has no notion of a resolve.
      expect(rx.callsTo('/hook')).toHaveLength(1);
    } finally {
      await rx.close();
    }
  });
});
