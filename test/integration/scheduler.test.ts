import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
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
 * The scheduler role end to end: threshold triggers over the per-minute aggregates (records
 * ingested through the real pipeline) and schedule triggers on node-cron, both producing jobs the
 * action runner delivers to a local receiver. The service evaluates thresholds every 2 s
 * (SCHEDULER_THRESHOLD_CRON in test/helpers/global-setup.ts).
 */

const ENV = 'prod01';

const base = (acct: TestAccount) =>
  `/v1/accounts/${acct.accountSid}/environments/${ENV}/buckets/${acct.bucketSid}/workflows`;

async function createWorkflow(acct: TestAccount, body: Record<string, unknown>): Promise<string> {
  const res = await api(acct.apiToken).post<{ sid: string }>(base(acct), {
    name: `scheduler ${randomBytes(3).toString('hex')}`,
    ...body,
  });
  expect(res.status, res.text).toBe(201);
  return res.body.sid;
}

interface TriggerState {
  last_fired_at: Date | null;
  last_evaluated_at: Date | null;
  last_value: number | null;
  last_result: boolean | null;
}

async function triggerState(workflowSid: string): Promise<TriggerState | undefined> {
  const r = await testPool().query<TriggerState>(
    'SELECT * FROM workflow_trigger_state WHERE workflow_sid = $1',
    [workflowSid],
  );
  return r.rows[0];
}

describe('scheduler', () => {
  it('fires a threshold workflow once when the error rate crosses its value, not again inside the window', async () => {
    const acct = await newAccount();
    const rx = await startReceiver();
    try {
      const wf = await createWorkflow(acct, {
        trigger: {
          type: 'threshold',
          conditions: [{ metric: 'error_rate', operator: 'greater_than', value: 10, timeWindow: '5m' }],
        },
        actions: [
          {
            type: 'webhook',
            config: {
              url: `${rx.url}/threshold`,
              body: {
                value: '{{metric.value}}',
                threshold: '{{metric.threshold}}',
                window: '{{metric.timeWindow}}',
                type: '{{trigger.type}}',
                message: '{{trigger.message}}',
                bucket: '{{bucket.name}}',
              },
            },
          },
        ],
      });

      // 12 of 18 requests answered 500: error rate 66.667 %
      const records = [
        ...Array.from({ length: 12 }, () =>
          makeRecord({ response: { statusCode: 500, headers: {}, size: 10 } }),
        ),
        ...Array.from({ length: 6 }, () => makeRecord()),
      ];
      const res = await ingest(acct.bucketSid, acct.apiToken, records);
      expect(res.status, res.text).toBe(202);

      await waitFor(() => rx.callsTo('/threshold').length > 0, {
        timeoutMs: 40_000,
        what: 'threshold webhook',
      });
      const call = rx.callsTo('/threshold')[0]!;
      expect(call.json).toEqual({
        value: '66.667',
        threshold: '10',
        window: '5m',
        type: 'threshold',
        message: 'error_rate is 66.667 (greater_than 10) over the last 5m',
        bucket: expect.stringMatching(/^bucket-/),
      });
      const fired = (await triggerState(wf))!;
      expect(fired.last_fired_at).toBeInstanceOf(Date);

      // Two more evaluations while the condition stays true: the cooldown holds the second fire.
      const later = await waitFor(
        async () => {
          const s = await triggerState(wf);
          return s?.last_evaluated_at &&
            s.last_evaluated_at.getTime() >= fired.last_fired_at!.getTime() + 4000
            ? s
            : undefined;
        },
        { timeoutMs: 20_000, what: 'two more evaluations' },
      );
      expect(later.last_result).toBe(true);
      expect(later.last_value).toBeCloseTo(66.667, 2);
      expect(later.last_fired_at!.getTime()).toBe(fired.last_fired_at!.getTime());
      expect(rx.callsTo('/threshold')).toHaveLength(1);

      const execs = await testPool().query<{ trigger_type: string; status: string }>(
        'SELECT trigger_type, status FROM workflow_executions WHERE workflow_sid = $1',
        [wf],
      );
      expect(execs.rows).toEqual([{ trigger_type: 'threshold', status: 'succeeded' }]);
    } finally {
      await rx.close();
    }
  });

  it('does not fire a threshold workflow whose condition is false', async () => {
    const acct = await newAccount();
    const rx = await startReceiver();
    try {
      const wf = await createWorkflow(acct, {
        trigger: {
          type: 'threshold',
          conditions: [
            { metric: 'avg_response_time', operator: 'greater_than', value: 1000, timeWindow: '10m' },
          ],
        },
        actions: [{ type: 'webhook', config: { url: `${rx.url}/slow` } }],
      });
      const res = await ingest(acct.bucketSid, acct.apiToken, [makeRecord(), makeRecord()]);
      expect(res.status).toBe(202);
      // evaluated with data (avg 12.5 ms), found false
      const s = await waitFor(
        async () => {
          const st = await triggerState(wf);
          return st?.last_value !== null && st?.last_value !== undefined ? st : undefined;
        },
        { timeoutMs: 30_000, what: 'an evaluation with data' },
      );
      expect(s.last_value).toBeCloseTo(12.5, 3);
      expect(s.last_result).toBe(false);
      expect(s.last_fired_at).toBeNull();
      expect(rx.calls).toHaveLength(0);
    } finally {
      await rx.close();
    }
  });

  it('fires a schedule workflow on its cron and stops when it is deactivated', async () => {
    const acct = await newAccount();
    const rx = await startReceiver();
    try {
      const every2s = {
        trigger: { type: 'schedule', schedule: '*/2 * * * * *' },
        actions: [
          {
            type: 'webhook',
            config: {
              url: `${rx.url}/tick`,
              body: { type: '{{trigger.type}}', message: '{{trigger.message}}' },
            },
          },
        ],
      };
      const wf = await createWorkflow(acct, { name: 'ticker', ...every2s });
      await waitFor(() => rx.callsTo('/tick').length >= 2, { timeoutMs: 20_000, what: 'two schedule ticks' });
      const [first, second] = rx.callsTo('/tick');
      expect(first!.json).toEqual({
        type: 'schedule',
        message: expect.stringMatching(/^schedule \*\/2 \* \* \* \* \* fired at \d{4}-.*Z$/),
      });
      expect(second!.at - first!.at).toBeGreaterThan(1000);

      // A control workflow keeps ticking: it measures time passing without a fixed sleep.
      const controlWf = await createWorkflow(acct, {
        name: 'control',
        ...every2s,
        actions: [{ type: 'webhook', config: { url: `${rx.url}/control` } }],
      });

      const put = await api(acct.apiToken).put(`${base(acct)}/${wf}`, {
        name: 'ticker',
        ...every2s,
        isActive: false,
      });
      expect(put.status, put.text).toBe(200);
      const atDeactivation = rx.callsTo('/tick').length;
      const controlStart = rx.callsTo('/control').length;
      await waitFor(() => rx.callsTo('/control').length >= controlStart + 3, {
        timeoutMs: 20_000,
        what: 'three control ticks',
      });
      // one tick may already have been on its way when the update landed; no more after that
      expect(rx.callsTo('/tick').length).toBeLessThanOrEqual(atDeactivation + 1);

      const execs = await testPool().query<{ n: number }>(
        "SELECT count(*)::int AS n FROM workflow_executions WHERE workflow_sid = $1 AND trigger_type = 'schedule' AND status = 'succeeded'",
        [wf],
      );
      expect(execs.rows[0]!.n).toBe(rx.callsTo('/tick').length);
      await api(acct.apiToken).delete(`${base(acct)}/${controlWf}`);
    } finally {
      await rx.close();
    }
  });
});
