import fs from 'node:fs';
import http from 'node:http';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSid } from '../../services/shared/ids.js';
import { freePort, waitFor } from '../helpers/service-process.js';
import { apiGet, collect, compare, expectExactlyOnce, record, waitDrained } from './fault-check.js';
import { FaultStack, type FaultAccount } from './fault-stack.js';
import { IngestLoad } from './ingest-load.js';

const ACTION_TIMEOUT_MS = 1000;
/** load per phase: 300 records/s for ~20 s */
const PHASE_RECORDS = 6000;

interface Freshness {
  stored: number;
  freshness: { p50: number; p99: number; max: number };
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** A webhook receiver that answers 204 at once, or, once `hang` is set, accepts and never answers. */
async function receiver(): Promise<{
  port: number;
  hang: boolean;
  hits: { answered: number; hung: number };
  close: () => Promise<void>;
}> {
  const port = await freePort();
  const sockets = new Set<Socket>();
  const state = {
    port,
    hang: false,
    hits: { answered: 0, hung: 0 },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = http.createServer((req, res) => {
    if (state.hang) {
      state.hits.hung++; // and never a response
      return;
    }
    state.hits.answered++;
    req.resume();
    res.writeHead(204).end();
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return state;
}

/**
 * Fault e: a request-trigger workflow whose webhook receiver never answers. Every stored record
 * becomes an action job; the action runner (same process as the processor) times each call out
 * after ACTION_TIMEOUT_MS and gives up after its attempts, while the processor keeps storing at
 * the same freshness as without the hang. Three phases of the same load: no workflow, the
 * workflow with a receiver that answers at once, the same workflow with the receiver hanging.
 * Freshness = ms from ingest receive to ClickHouse insert, exact p50/p99 from GET /pipeline/stats
 * over each phase's window.
 */
describe('fault: an action receiver that hangs', () => {
  let stack: FaultStack;
  let acct: FaultAccount;
  let hook: Awaited<ReturnType<typeof receiver>>;

  beforeAll(async () => {
    hook = await receiver();
    stack = await FaultStack.start('hanging-action');
    await stack.startCore({
      OUTBOUND_ALLOW: '127.0.0.1',
      ACTION_TIMEOUT_MS: String(ACTION_TIMEOUT_MS),
      ACTION_MAX_ATTEMPTS: '2',
      ACTION_BACKOFF_MS: '200',
      // Every record of the load is an execution: above the default per-minute limits, which would
      // skip them instead of calling the receiver.
      ACTION_RATE_LIMIT_WORKFLOW: '1000000',
      ACTION_RATE_LIMIT_ACCOUNT: '1000000',
    });
    await stack.startIngest();
    acct = await stack.createAccount();
  });
  afterAll(async () => {
    await stack?.close();
    await hook?.close();
  });

  /** One phase: PHASE_RECORDS records at 300/s, drained; its freshness and the core's CPU use. */
  async function phase(load: IngestLoad): Promise<Freshness & { cpuSeconds: number; seconds: number }> {
    const from = new Date();
    const cpu0 = cpuSeconds(stack.core!.child.pid!);
    load.start();
    await load.waitForMoreAcked(PHASE_RECORDS);
    await load.stop();
    await waitDrained(stack);
    const to = new Date();
    const cpu = cpuSeconds(stack.core!.child.pid!) - cpu0;
    const r = await apiGet<Freshness>(
      stack,
      acct,
      `/v1/accounts/${acct.accountSid}/pipeline/stats?bucketSid=${acct.bucketSid}` +
        `&startDate=${from.toISOString()}&endDate=${to.toISOString()}`,
    );
    expect(r.status).toBe(200);
    const seconds = (to.getTime() - from.getTime()) / 1000;
    return {
      stored: r.body.stored,
      freshness: r.body.freshness,
      cpuSeconds: Math.round(cpu * 10) / 10,
      seconds: Math.round(seconds),
    };
  }

  it('times the calls out and does not slow the pipeline', async () => {
    const since = new Date();
    const opts = { ingestUrl: stack.ingestUrl, bucketSid: acct.bucketSid, token: acct.apiToken, rate: 300 };
    const loads: IngestLoad[] = [];
    const next = () => {
      const l = new IngestLoad(opts);
      loads.push(l);
      return l;
    };
    // Phase 1: no workflow.
    const none = await phase(next());

    const workflowSid = newSid('workflow');
    await stack.pool.query(
      `INSERT INTO workflows (sid, account_sid, environment_sid, bucket_sid, name, trigger, actions)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        workflowSid,
        acct.accountSid,
        'prod01',
        acct.bucketSid,
        'fault receiver',
        JSON.stringify({ type: 'request', conditions: [] }),
        JSON.stringify([
          { type: 'webhook', config: { url: `http://127.0.0.1:${hook.port}/hook` }, order: 0 },
        ]),
      ],
    );
    // Phase 2: every record triggers the webhook; the receiver answers at once.
    const warm = next();
    warm.start();
    await waitFor(() => hook.hits.answered > 0, { timeoutMs: 60_000, what: 'first webhook call' });
    await warm.stop();
    await waitDrained(stack);
    const answering = await phase(next());
    // Phase 3: the same workflow, the receiver now hangs.
    hook.hang = true;
    const hanging = await phase(next());
    expect(hook.hits.hung).toBeGreaterThan(0);

    const timedOut = await waitFor(
      async () => {
        const r = await stack.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM workflow_executions
           WHERE workflow_sid = $1 AND detail::text LIKE $2`,
          [workflowSid, `%timed out after ${ACTION_TIMEOUT_MS} ms%`],
        );
        return r.rows[0]!.n > 0 ? r.rows[0]!.n : undefined;
      },
      { timeoutMs: 60_000, what: 'an execution that timed out' },
    );
    const executions = await stack.pool.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM workflow_executions WHERE workflow_sid = $1 GROUP BY status',
      [workflowSid],
    );

    // One load object holds both phases' sids, so the set comparison covers every record sent.
    const all = new IngestLoad(opts);
    for (const l of loads) {
      for (const s of l.acked) all.acked.add(s);
      for (const s of l.unacked) all.unacked.add(s);
      for (const s of l.rejected) all.rejected.add(s);
      all.answers.push(...l.answers);
    }
    const fig = compare('e. hanging action receiver', all, await collect(stack, acct, since), {
      recoveryMs: null,
      notes: {
        phases: { none, answering, hanging },
        webhookCalls: hook.hits,
        executionsWithTimeout: timedOut,
        executionsByStatus: Object.fromEntries(executions.rows.map((r) => [r.status, r.n])),
      },
    });
    record(fig);
    expect(hanging.stored).toBeGreaterThanOrEqual(PHASE_RECORDS);
    // A pipeline that waited for the receiver would add at least one ACTION_TIMEOUT_MS per block
    // (and fall behind without bound); this machine's noise between phases is a few hundred ms.
    expect(hanging.freshness.p99).toBeLessThan(
      Math.max(none.freshness.p99, answering.freshness.p99) + ACTION_TIMEOUT_MS,
    );
    for (const status of Object.keys(fig.statuses)) expect(status).toBe('202');
    expectExactlyOnce(fig, all);
  });
});
