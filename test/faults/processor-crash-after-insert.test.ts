import fs from 'node:fs';
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

/**
 * Fault b: the processor dies in the worst window, after ClickHouse confirmed a block's insert and
 * before the offsets are committed. FAULT_CRASH_AFTER_INSERT=true makes it SIGKILL itself right
 * there (requests.sink.ts). The restarted processor gets the same messages again, re-forms
 * the same offset range and re-sends it with the same insert_deduplication_token: ClickHouse drops
 * the block in the raw table and in the requests_minute aggregate alike.
 */
describe('fault: processor killed between the ClickHouse insert and the offset commit', () => {
  let stack: FaultStack;
  let acct: FaultAccount;

  beforeAll(async () => {
    stack = await FaultStack.start('crash-after-insert');
    await stack.startCore({ FAULT_CRASH_AFTER_INSERT: 'true' });
    await stack.startIngest();
    acct = await stack.createAccount();
  });
  afterAll(async () => stack?.close());

  it('stores nothing twice, in raw rows or aggregates', async () => {
    const since = new Date();
    const load = new IngestLoad({
      ingestUrl: stack.ingestUrl,
      bucketSid: acct.bucketSid,
      token: acct.apiToken,
      rate: 300,
      maxRecords: 12_000,
    });
    const crashed = stack.core!;
    load.start();
    let recoveryMs: number;
    let readyMs: number;
    let crash: { partition: number; range: { min: number; max: number } } | undefined;
    try {
      // The first block it writes is the last thing it does.
      await crashed.exited;
      expect(crashed.child.signalCode).toBe('SIGKILL');
      const line = fs
        .readFileSync(crashed.logFile, 'utf8')
        .split('\n')
        .find((l) => l.includes('FAULT_CRASH_AFTER_INSERT: exiting before commit'));
      expect(line, 'the crash hook fired').toBeDefined();
      crash = JSON.parse(line!) as typeof crash;
      // The inserted block's offsets are not committed, so they will be delivered again.
      const lag = await lagNow(stack);
      const part = lag.partitions.find((p) => p.partition === crash!.partition)!;
      expect(part.committed).toBeLessThanOrEqual(crash!.range.min);
      expect(part.high).toBeGreaterThan(crash!.range.max);
      const committed = lag.committed;
      await load.waitForMoreAcked(1000);
      const restartAt = performance.now();
      await stack.startCore();
      readyMs = performance.now() - restartAt;
      await waitCommitPast(stack, committed);
      recoveryMs = performance.now() - restartAt;
      await load.waitForMoreAcked(1500);
    } finally {
      await load.stop();
    }
    const drainMs = await waitDrained(stack);
    const fig = compare('b. crash between insert and commit', load, await collect(stack, acct, since), {
      recoveryMs,
      notes: {
        recovery: 'restart to first commit',
        restartToReadyMs: Math.round(readyMs),
        crashedBlock: crash,
        drainMs,
      },
    });
    record(fig);
    expect(fig.statuses).toEqual({ '202': load.answers.length });
    expectExactlyOnce(fig, load);
  });
});
