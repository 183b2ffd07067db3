import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/service-process.js';
import { apiGet, collect, compare, expectExactlyOnce, record, waitDrained } from './fault-check.js';
import { FaultStack, type FaultAccount } from './fault-stack.js';
import { IngestLoad } from './ingest-load.js';

/**
 * Fault f: the core process in CLICKHOUSE_MODE=server (it starts its own ClickHouse server) is
 * SIGKILLed under load, then started again at once with the same environment, as a plain restart
 * would. The ClickHouse server it left behind is stopped by its watchdog or by the new start
 * (infra/local/clickhouse-server.launcher.ts), the new core comes up on the same data, and every
 * acknowledged record is stored exactly once.
 */
const SERVER_MODE = { CLICKHOUSE_MODE: 'server' };

describe('fault: core SIGKILL in ClickHouse server mode, plain restart', () => {
  let stack: FaultStack;
  let acct: FaultAccount;

  beforeAll(async () => {
    stack = await FaultStack.start('clickhouse-server-kill');
    await stack.startCore(SERVER_MODE);
    await stack.startIngest();
    acct = await stack.createAccount();
  });
  afterAll(async () => stack?.close());

  it('restarts after kill -9 and stores every acknowledged record exactly once', async () => {
    const since = new Date();
    const load = new IngestLoad({
      ingestUrl: stack.ingestUrl,
      bucketSid: acct.bucketSid,
      token: acct.apiToken,
      rate: 300,
      maxRecords: 24_000,
    });
    load.start();
    try {
      await load.waitForMoreAcked(1500);
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
      // The plain restart, at once: the old ClickHouse server may still hold its data folder.
      await stack.startCore(SERVER_MODE);
      await load.waitForMoreAcked(1500);
    } finally {
      await load.stop();
    }
    const drainMs = await waitDrained(stack);
    const fig = compare(
      'f. core SIGKILL in ClickHouse server mode',
      load,
      await collect(stack, acct, since),
      {
        notes: { drainMs },
      },
    );
    record(fig);
    expectExactlyOnce(fig, load);
  });
});
