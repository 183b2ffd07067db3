import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AlertsRepository } from '../../services/api/workflows/alerts.repository.js';
import {
  api,
  ingest,
  makeRecord,
  newAccount,
  testPool,
  waitFor,
  type TestAccount,
} from '../helpers/client.js';
import { startReceiver } from '../helpers/http-receiver.js';

/**
 * GET /v1/accounts/{a}/alerts (docs/workflows-api.md "Alerts"): threshold and error workflows as
 * alerts, firing or resolved since when, with their latest executions, against the real scheduler
 * (thresholds evaluated every 2 s in the test stack), processor and action runner.
 */
const ENV = 'prod01';

interface Alert {
  workflowSid: string;
  name: string;
  triggerType: string;
  isActive: boolean;
  state: string;
  since: string | null;
  lastFiredAt: string | null;
  lastEvaluatedAt: string | null;
  lastValue: number | null;
  executions: { sid: string; status: string; createdAt: string; trigger: { message: string } | null }[];
}

const base = (acct: TestAccount) =>
  `/v1/accounts/${acct.accountSid}/environments/${ENV}/buckets/${acct.bucketSid}/workflows`;

async function alerts(acct: TestAccount, query = ''): Promise<Alert[]> {
  const res = await api(acct.apiToken).get<{ hasMore: boolean; records: Alert[] }>(
    `/v1/accounts/${acct.accountSid}/alerts${query}`,
  );
  expect(res.status, res.text).toBe(200);
  expect(res.body.hasMore).toBe(false);
  return res.body.records;
}

describe('alerts', () => {
  it('lists threshold and error workflows as firing or resolved since when, with their executions', async () => {
    const acct = await newAccount();
    const rx = await startReceiver();
    const tag = randomBytes(3).toString('hex');
    try {
      const create = async (name: string, trigger: unknown, isActive = true) => {
        const res = await api(acct.apiToken).post<{ sid: string }>(base(acct), {
          name: `${name} ${tag}`,
          trigger,
          isActive,
          actions: [{ type: 'webhook', config: { url: `${rx.url}/${name}` } }],
        });
        expect(res.status, res.text).toBe(201);
        return res.body.sid;
      };
      const threshold = await create('threshold', {
        type: 'threshold',
        conditions: [{ metric: 'error_rate', operator: 'greater_than', value: 10, timeWindow: '5m' }],
      });
      const error = await create('error', { type: 'error', conditions: [{ statusCode: '5xx' }] });
      const paused = await create('paused', { type: 'error', conditions: [] }, false);
      await create('request', { type: 'request', conditions: [] }, false);

      // No traffic: the threshold does not hold once evaluated; the error alert never fired.
      const quiet = await waitFor(
        async () => {
          const list = await alerts(acct);
          return list.find((a) => a.workflowSid === threshold)?.lastEvaluatedAt ? list : undefined;
        },
        { timeoutMs: 30_000, what: 'first threshold evaluation' },
      );
      expect(quiet.map((a) => [a.workflowSid, a.triggerType, a.state])).toEqual([
        [threshold, 'threshold', 'resolved'],
        [error, 'error', 'resolved'],
        [paused, 'error', 'paused'],
      ]);
      const t0 = quiet[0]!;
      expect(t0.since).not.toBeNull();
      expect(t0.lastValue).toBeNull();
      expect(t0.executions).toEqual([]);
      expect(quiet[1]).toMatchObject({
        since: null,
        lastFiredAt: null,
        lastEvaluatedAt: null,
        executions: [],
      });

      // 12 of 18 requests answered 503: both fire.
      const before = Date.now();
      const res = await ingest(acct.bucketSid, acct.apiToken, [
        ...Array.from({ length: 12 }, () =>
          makeRecord({ response: { statusCode: 503, headers: {}, size: 3 } }),
        ),
        ...Array.from({ length: 6 }, () => makeRecord()),
      ]);
      expect(res.status, res.text).toBe(202);
      const firing = await waitFor(
        async () => {
          const list = await alerts(acct, '?state=firing');
          return list.length === 2 && list.every((a) => a.executions.length > 0) ? list : undefined;
        },
        { timeoutMs: 40_000, what: 'both alerts firing' },
      );
      const [th, er] = firing;
      expect(th!.workflowSid).toBe(threshold);
      expect(th!.lastValue).toBeCloseTo(66.667, 2);
      // Since the evaluation that first held: after the traffic, before the first execution.
      expect(Date.parse(th!.since!)).toBeGreaterThan(Date.parse(t0.since!));
      expect(Date.parse(th!.since!)).toBeLessThanOrEqual(Date.parse(th!.executions.at(-1)!.createdAt));
      expect(th!.executions[0]!.trigger?.message).toBe(
        'error_rate is 66.667 (greater_than 10) over the last 5m',
      );
      expect(er!.workflowSid).toBe(error);
      // Since the first execution of the burst: one per 503, at most 5 listed, newest first.
      expect(er!.executions.length).toBe(5);
      const times = er!.executions.map((x) => Date.parse(x.createdAt));
      expect([...times].sort((a, b) => b - a)).toEqual(times);
      expect(Date.parse(er!.since!)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(er!.since!)).toBeLessThanOrEqual(times.at(-1)!);
      expect(er!.lastFiredAt).toBe(er!.executions[0]!.createdAt);
      expect(await alerts(acct, '?state=paused')).toHaveLength(1);

      // Five quiet minutes after its last execution the error alert is resolved (read as of then).
      const later = new Date(Date.parse(er!.lastFiredAt!) + 5 * 60_000 + 1000);
      const then = await new AlertsRepository(testPool()).list(acct.accountSid, {}, later);
      const erLater = then.find((a) => a.workflowSid === error)!;
      expect(erLater.state).toBe('resolved');
      expect(erLater.since).toBe(new Date(Date.parse(er!.lastFiredAt!) + 5 * 60_000).toISOString());

      // Enough good traffic brings the error rate under 10 %: the threshold alert resolves.
      const ok = await ingest(
        acct.bucketSid,
        acct.apiToken,
        Array.from({ length: 150 }, () => makeRecord()),
      );
      expect(ok.status, ok.text).toBe(202);
      const resolved = await waitFor(
        async () => {
          const a = (await alerts(acct)).find((x) => x.workflowSid === threshold);
          return a?.state === 'resolved' ? a : undefined;
        },
        { timeoutMs: 40_000, what: 'threshold resolved' },
      );
      expect(Date.parse(resolved.since!)).toBeGreaterThan(Date.parse(th!.since!));
      expect(resolved.lastValue).toBeLessThan(10);
    } finally {
      await rx.close();
    }
  });

  it('refuses a bad state, another account and its buckets with the error envelope', async () => {
    const acct = await newAccount();
    const other = await newAccount();
    const bad = await api(acct.apiToken).get(`/v1/accounts/${acct.accountSid}/alerts?state=burning`);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
    const foreignBucket = await api(acct.apiToken).get(
      `/v1/accounts/${acct.accountSid}/alerts?bucketSid=${other.bucketSid}`,
    );
    expect(foreignBucket.status).toBe(404);
    expect(foreignBucket.body).toMatchObject({ success: false, error: { code: 'RESOURCE_NOT_FOUND' } });
    const foreign = await api(acct.apiToken).get(`/v1/accounts/${other.accountSid}/alerts`);
    expect(foreign.status).toBe(404);
    expect(await alerts(acct, `?bucketSid=${acct.bucketSid}&environmentSid=${ENV}`)).toEqual([]);
  });
});
