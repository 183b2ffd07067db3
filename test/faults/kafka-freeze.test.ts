import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, compare, expectExactlyOnce, record, waitDrained } from './fault-check.js';
import { FaultStack, type FaultAccount } from './fault-stack.js';
import { IngestLoad } from './ingest-load.js';

const PRODUCE_TIMEOUT_MS = 5000;
/** linger, auth from cache, body parsing and a loaded 2-core machine */
const ANSWER_MARGIN_MS = 2000;

/**
 * Fault c, second form: the broker does not die but stops answering (SIGSTOP, like a long GC
 * pause or a network partition that keeps the connections open), then resumes (SIGCONT). A dead
 * port answers at once (ECONNREFUSED); a frozen one never does, so this is the case where only
 * ingest's own produce deadline (INGEST_PRODUCE_TIMEOUT_MS) stands between a client and a hang.
 */
describe('fault: Kafka broker frozen (SIGSTOP) and resumed under load', () => {
  let stack: FaultStack;
  let acct: FaultAccount;

  beforeAll(async () => {
    stack = await FaultStack.start('kafka-freeze');
    await stack.startCore();
    await stack.startIngest({ INGEST_PRODUCE_TIMEOUT_MS: String(PRODUCE_TIMEOUT_MS) });
    acct = await stack.createAccount();
  });
  afterAll(async () => {
    stack?.kafka.kill('SIGCONT');
    await stack?.close();
  });

  it('answers 503 at the produce deadline, never hangs, stores each acknowledged record once', async () => {
    const since = new Date();
    const load = new IngestLoad({
      ingestUrl: stack.ingestUrl,
      bucketSid: acct.bucketSid,
      token: acct.apiToken,
      rate: 300,
      maxRecords: 40_000,
    });
    load.start();
    let frozenAt: number;
    let resumedAt: number;
    let first202: number;
    try {
      await load.waitForMoreAcked(1500);
      frozenAt = performance.now();
      stack.kafka.kill('SIGSTOP');
      // Frozen until every sender has waited out the deadline at least twice.
      const first503 = await load.waitForAnswer(503, frozenAt, 60_000);
      await load.waitForAnswer(503, first503.end + PRODUCE_TIMEOUT_MS, 60_000);
      resumedAt = performance.now();
      stack.kafka.kill('SIGCONT');
      first202 = (await load.waitForAnswer(202, resumedAt, 120_000)).end;
      await load.waitForMoreAcked(1500);
    } finally {
      stack.kafka.kill('SIGCONT');
      await load.stop();
    }
    const drainMs = await waitDrained(stack);
    const fig = compare('c2. Kafka broker SIGSTOP + SIGCONT', load, await collect(stack, acct, since), {
      recoveryMs: Math.max(0, first202 - resumedAt),
      notes: {
        recovery: 'SIGCONT to first 202',
        brokerFrozenMs: Math.round(resumedAt - frozenAt),
        maxAnswerWhileFrozenMs: Math.round(load.maxAnswerMs(frozenAt, resumedAt)),
        answers503: load.answers.filter((a) => a.status === 503).length,
        drainMs,
      },
    });
    record(fig);
    for (const status of Object.keys(fig.statuses)) expect(['202', '503']).toContain(status);
    expect(fig.maxAnswerMs, 'no answer hangs past the produce timeout').toBeLessThan(
      PRODUCE_TIMEOUT_MS + ANSWER_MARGIN_MS,
    );
    expectExactlyOnce(fig, load);
  });
});
