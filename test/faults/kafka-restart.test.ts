import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  collect,
  compare,
  expectExactlyOnce,
  record,
  waitCommitPast,
  waitDrained,
  lagNow,
} from './fault-check.js';
import { FaultStack, type FaultAccount } from './fault-stack.js';
import { IngestLoad } from './ingest-load.js';

const PRODUCE_TIMEOUT_MS = 5000;
/** linger, auth from cache, body parsing and a loaded 2-core machine */
const ANSWER_MARGIN_MS = 2000;

/**
 * Fault c: the Kafka broker is SIGKILLed under load and started again on the same data directory.
 * While it is down, ingest must answer 503 within INGEST_PRODUCE_TIMEOUT_MS (plus a margin), never
 * 500 and never hang; after the restart ingest and the processor recover by themselves, and every
 * record answered 202 is stored exactly once.
 */
describe('fault: Kafka broker killed and restarted under load', () => {
  let stack: FaultStack;
  let acct: FaultAccount;

  beforeAll(async () => {
    stack = await FaultStack.start('kafka-restart');
    await stack.startCore();
    await stack.startIngest({ INGEST_PRODUCE_TIMEOUT_MS: String(PRODUCE_TIMEOUT_MS) });
    acct = await stack.createAccount();
  });
  afterAll(async () => stack?.close());

  it('answers 503 while the broker is down, recovers by itself, loses and repeats nothing', async () => {
    const since = new Date();
    const load = new IngestLoad({
      ingestUrl: stack.ingestUrl,
      bucketSid: acct.bucketSid,
      token: acct.apiToken,
      rate: 300,
      // Calls answered 503 use up records too (~300/s while the broker is down).
      maxRecords: 40_000,
    });
    load.start();
    let killAt: number;
    let restartAt: number;
    let readyAt: number;
    let first202: number;
    let unavailable: number;
    let processorMs: number;
    try {
      await load.waitForMoreAcked(1500);
      killAt = performance.now();
      await stack.killKafka();
      // Keep it down until ingest has answered several calls with 503 (each waits out the timeout).
      const first503 = await load.waitForAnswer(503, killAt, 60_000);
      await load.waitForAnswer(503, first503.end, 60_000);
      await load.waitForAnswer(503, first503.end + PRODUCE_TIMEOUT_MS, 60_000);
      restartAt = performance.now();
      await stack.restartKafka();
      readyAt = performance.now();
      // Nothing can commit while the broker is down: this is the last commit before the kill.
      const committed = (await lagNow(stack)).committed;
      // A call started after the kill can only be acknowledged once the broker is back.
      first202 = (await load.waitForAnswer(202, killAt, 120_000)).end;
      unavailable = load.answers.filter((a) => a.status === 503).length;
      // The processor's consumer reconnects by itself too (kafkajs restarts a crashed consumer).
      await waitCommitPast(stack, committed);
      processorMs = performance.now() - readyAt;
      await load.waitForMoreAcked(1500);
    } finally {
      await load.stop();
    }
    const drainMs = await waitDrained(stack);
    const outageMax = load.maxAnswerMs(killAt, readyAt);
    const fig = compare('c. Kafka broker SIGKILL + restart', load, await collect(stack, acct, since), {
      recoveryMs: Math.max(0, first202 - readyAt),
      maxAnswerMs: load.maxAnswerMs(),
      notes: {
        recovery: 'broker ready to first 202',
        brokerDownMs: Math.round(readyAt - killAt),
        brokerRestartMs: Math.round(readyAt - restartAt),
        processorFirstCommitAfterRestartMs: Math.round(processorMs),
        maxAnswerDuringOutageMs: Math.round(outageMax),
        answers503: unavailable,
        drainMs,
      },
    });
    record(fig);
    for (const status of Object.keys(fig.statuses)) expect(['202', '503']).toContain(status);
    expect(unavailable).toBeGreaterThanOrEqual(3);
    expect(fig.maxAnswerMs, 'no answer hangs past the produce timeout').toBeLessThan(
      PRODUCE_TIMEOUT_MS + ANSWER_MARGIN_MS,
    );
    expectExactlyOnce(fig, load);
  });
});
