import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/service-process.js';
import { collect, compare, expectExactlyOnce, record, waitDrained, lagNow } from './fault-check.js';
import { FaultStack, type FaultAccount } from './fault-stack.js';
import { clientSid, faultRecord, IngestLoad, RULE_HEADER } from './ingest-load.js';

const REPLACEMENT = '[fault-redacted]';

type Json = Record<string, unknown>;

/**
 * Fault d: Postgres is stopped (fast shutdown) under load and started again.
 * - The API answers 503 SERVICE_UNAVAILABLE while it is down, and 200 again by itself after.
 * - Ingest authenticates from its credential/bucket cache (30 s); calls keep being acknowledged
 *   until the cache entry expires, then 503 until Postgres is back.
 * - The processor keeps its rule snapshot (a server-side redaction rule stays applied) and keeps
 *   committing: it does not need Postgres to process records.
 */
describe('fault: Postgres restarted under load', () => {
  let stack: FaultStack;
  let acct: FaultAccount;

  beforeAll(async () => {
    stack = await FaultStack.start('postgres-restart');
    await stack.startCore();
    await stack.startIngest();
    acct = await stack.createAccount();
  });
  afterAll(async () => stack?.close());

  async function call(
    method: string,
    p: string,
    body?: unknown,
  ): Promise<{ status: number; body: Json; ms: number }> {
    const t = performance.now();
    const res = await fetch(stack.apiUrl + p, {
      method,
      headers: {
        authorization: `Bearer ${acct.apiToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as Json, ms: performance.now() - t };
  }

  /** Waits until the processor applies the redaction: a probe record (in another bucket) comes back redacted. */
  async function waitRuleApplied(probeBucket: string): Promise<void> {
    await waitFor(
      async () => {
        const sid = clientSid();
        const res = await fetch(`${stack.ingestUrl}/v1/buckets/${probeBucket}/ingest`, {
          method: 'POST',
          headers: { authorization: `Bearer ${acct.apiToken}`, 'content-type': 'application/json' },
          body: JSON.stringify({ records: [faultRecord(sid, 0)] }),
        });
        if (res.status !== 202) return false;
        const got = await waitFor(
          async () => {
            const r = await call(
              'GET',
              `/v1/accounts/${acct.accountSid}/buckets/${probeBucket}/requests/${sid}`,
            );
            return r.status === 200 ? r.body : undefined;
          },
          { timeoutMs: 30_000, what: 'probe stored' },
        );
        const headers = (got.request as { headers: Json }).headers;
        return headers[RULE_HEADER] === REPLACEMENT;
      },
      { timeoutMs: 60_000, intervalMs: 200, what: 'redaction applied' },
    );
  }

  it('answers 503 while Postgres is down, keeps processing with the rule snapshot, recovers', async () => {
    const base = `/v1/accounts/${acct.accountSid}`;
    const rule = await call('POST', `${base}/redactions`, {
      name: 'fault label',
      fieldPath: `$.request.headers.${RULE_HEADER}`,
      redactionType: 'replace',
      replacementValue: REPLACEMENT,
    });
    expect(rule.status, JSON.stringify(rule.body)).toBe(201);
    const probe = await call('POST', `${base}/buckets`, { name: 'fault probes' });
    expect(probe.status, JSON.stringify(probe.body)).toBe(201);
    await waitRuleApplied(String(probe.body.sid));

    const since = new Date();
    const load = new IngestLoad({
      ingestUrl: stack.ingestUrl,
      bucketSid: acct.bucketSid,
      token: acct.apiToken,
      rate: 300,
      maxRecords: 25_000,
    });
    const apiDuring: { status: number; code: unknown; ms: number }[] = [];
    const figures: Record<string, number> = {};
    load.start();
    try {
      await load.waitForMoreAcked(1500);
      // A credential change clears every cache (NOTIFY tapline_auth): ingest looks its token up
      // again now, so its cache entry has a full 30 s to live when Postgres goes away.
      const token = await call('POST', `${base}/apiTokens`, {
        name: 'cache reset',
        scopes: ['buckets:read'],
      });
      expect(token.status).toBe(201);
      const ackedBefore = load.acked.size;
      await load.waitForMoreAcked(300);
      const committedAtStop = (await lagNow(stack)).committed;

      const stopAt = performance.now();
      await stack.stopPostgres();
      const downAt = performance.now();
      // The API, probed every 500 ms during the outage, must answer 503 and nothing else.
      const apiProbe = (async () => {
        while (performance.now() - downAt < 5_000 || !load.firstAnswer(503, downAt)) {
          const r = await call('GET', `${base}/buckets/${acct.bucketSid}`);
          apiDuring.push({
            status: r.status,
            code: (r.body.error as Json | undefined)?.code,
            ms: Math.round(r.ms),
          });
          if (performance.now() - downAt > 60_000) break;
          await new Promise((resolve) => setTimeout(resolve, 500));
        }
      })();
      // Ingest keeps acknowledging from its cache, then answers 503 once the entry expires.
      const first503 = await load.waitForAnswer(503, downAt, 60_000);
      await apiProbe;
      const ackedDuringOutage = load.answers.filter((a) => a.status === 202 && a.start >= downAt);
      const lastAckInOutage = Math.max(0, ...ackedDuringOutage.map((a) => a.end));
      // The processor kept committing what ingest acknowledged during the outage.
      const during = await lagNow(stack);

      const restartAt = performance.now();
      await stack.restartPostgres();
      const upAt = performance.now();
      await waitFor(async () => (await call('GET', `${base}/buckets/${acct.bucketSid}`)).status === 200, {
        timeoutMs: 60_000,
        intervalMs: 100,
        what: 'API 200 after the restart',
      });
      const apiBackAt = performance.now();
      const ingestBack = await load.waitForAnswer(202, upAt, 60_000);
      await load.waitForMoreAcked(1000);

      Object.assign(figures, {
        ackedBeforeOutage: ackedBefore,
        pgStopMs: Math.round(downAt - stopAt),
        pgDownMs: Math.round(upAt - downAt),
        pgRestartMs: Math.round(upAt - restartAt),
        ingestAcceptedIntoOutageMs: Math.round(Math.max(0, lastAckInOutage - downAt)),
        ingestFirst503AfterMs: Math.round(first503.end - downAt),
        recordsAckedDuringOutage: ackedDuringOutage.reduce((s, a) => s + a.records, 0),
        committedDuringOutage: during.committed - committedAtStop,
        lagAtEndOfOutage: during.lag,
        apiRecoveryMs: Math.round(apiBackAt - upAt),
        ingestRecoveryMs: Math.round(Math.max(0, ingestBack.end - upAt)),
      });
    } finally {
      await load.stop();
    }
    const drainMs = await waitDrained(stack);
    const got = await collect(stack, acct, since);
    const unredacted = got.rows.filter(
      (r) => (r.request as { headers: Json }).headers[RULE_HEADER] !== REPLACEMENT,
    ).length;
    const fig = compare('d. Postgres stop + start', load, got, {
      recoveryMs: Math.max(figures.apiRecoveryMs!, figures.ingestRecoveryMs!),
      notes: {
        recovery: 'Postgres ready to API 200 and ingest 202 (the later)',
        ...figures,
        apiDuringOutage: summarize(apiDuring),
        unredacted,
        drainMs,
      },
    });
    record(fig);
    expect(apiDuring.length).toBeGreaterThan(0);
    for (const a of apiDuring) expect(a).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE' });
    for (const status of Object.keys(fig.statuses)) expect(['202', '503']).toContain(status);
    expect(figures.recordsAckedDuringOutage, 'ingest served from its cache').toBeGreaterThan(0);
    expect(figures.committedDuringOutage, 'the processor kept committing').toBeGreaterThan(0);
    expect(unredacted, 'the rule snapshot stayed applied').toBe(0);
    expectExactlyOnce(fig, load);
  });
});

function summarize(list: { status: number; code: unknown; ms: number }[]): Record<string, unknown> {
  const by: Record<string, number> = {};
  for (const a of list)
    by[`${a.status} ${String(a.code ?? '')}`.trim()] =
      (by[`${a.status} ${String(a.code ?? '')}`.trim()] ?? 0) + 1;
  return { answers: by, maxMs: Math.max(0, ...list.map((a) => a.ms)) };
}
