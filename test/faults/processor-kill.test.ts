import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/service-process.js';
import {
  apiGet,
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

/**
 * Fault a: the process running the processor is SIGKILLed while it consumes a steady load, then
 * started again. Ingest (its own process) keeps acknowledging; the restarted processor resumes
 * from the committed offsets and re-sends the block it was writing with the same deduplication
 * token, so nothing is lost and nothing is stored twice. The processor fetches at most 1 KiB of
 * the partition at a time (Kafka still returns one whole message, ~38 KB here): a fetch that ends
 * before the partition's end is held and joined by the next ones (resolved, not committed). That
 * happens now and then while the load runs and on nearly every fetch of the catch-up after the
 * restart (215 holds in one run), so the exactly-once check covers held fetches too.
 */
const SMALL_FETCHES = { PROCESSOR_FETCH_MAX_BYTES: '1024' };
describe('fault: processor SIGKILL mid-batch', () => {
  let stack: FaultStack;
  let acct: FaultAccount;

  beforeAll(async () => {
    stack = await FaultStack.start('processor-kill');
    await stack.startCore(SMALL_FETCHES);
    await stack.startIngest();
    acct = await stack.createAccount();
  });
  afterAll(async () => stack?.close());

  it('stores every acknowledged record exactly once after a SIGKILL and a restart', async () => {
    const since = new Date();
    const load = new IngestLoad({
      ingestUrl: stack.ingestUrl,
      bucketSid: acct.bucketSid,
      token: acct.apiToken,
      rate: 300,
      maxRecords: 15_000,
    });
    load.start();
    let recoveryMs: number;
    let readyMs: number;
    try {
      await load.waitForMoreAcked(1500);
      // Kill only once rows are flowing, so the kill lands among blocks being written.
      await waitFor(
        async () => {
          const r = await apiGet<{ stored: number }>(
            stack,
            acct,
            `/v1/accounts/${acct.accountSid}/pipeline/stats?bucketSid=${acct.bucketSid}`,
          );
          return r.body.stored >= 500;
        },
        { timeoutMs: 60_000, what: 'rows flowing' },
      );
      stack.core!.child.kill('SIGKILL');
      await stack.core!.exited;
      expect(stack.core!.child.signalCode).toBe('SIGKILL');
      // Ingest does not depend on the processor: it keeps acknowledging while it is down.
      await load.waitForMoreAcked(1500);
      const committed = (await lagNow(stack)).committed;
      const restartAt = performance.now();
      await stack.startCore(SMALL_FETCHES);
      readyMs = performance.now() - restartAt;
      await waitCommitPast(stack, committed);
      recoveryMs = performance.now() - restartAt;
      await load.waitForMoreAcked(1500);
    } finally {
      await load.stop();
    }
    const drainMs = await waitDrained(stack);
    const fig = compare('a. processor SIGKILL mid-batch', load, await collect(stack, acct, since), {
      recoveryMs,
      notes: { recovery: 'restart to first commit', restartToReadyMs: Math.round(readyMs), drainMs },
    });
    record(fig);
    expect(fig.statuses, 'ingest answers while the processor is down').toEqual({
      '202': load.answers.length,
    });
    expectExactlyOnce(fig, load);
  });
});
