import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { CONSUMER_GROUPS, TOPICS } from '../../services/shared/topics.js';
import { MAX_PAGE_DEPTH } from '../../services/api/tables/pagination.js';
import { waitFor } from '../helpers/service-process.js';
import { groupLag, lagAdmin, type GroupLag } from './consumer-lag.js';
import { FAULT_RUNS_DIR, type FaultAccount } from './fault-stack.js';
import type { IngestLoad } from './ingest-load.js';

export interface FaultFigures {
  case: string;
  at: string;
  /** records answered 202 (and accepted) */
  acknowledged: number;
  /** acknowledged records found through the API (distinct sids) */
  found: number;
  missing: number;
  /** rows beyond the first for an acknowledged sid: the guarantee says 0 */
  duplicates: number;
  /** records sent and not answered 202 (503, network error, timeout) */
  unacknowledged: number;
  /** of those, stored anyway (Kafka had them when the answer gave up): allowed, reported */
  unacknowledgedStored: number;
  /** rows beyond the first for an unacknowledged sid (a producer retry appended it twice): reported */
  unacknowledgedDuplicates: number;
  /** stored sids this test never sent */
  unexpected: number;
  /** exact raw count from GET /pipeline/stats */
  rawRows: number;
  /** rows listed page by page through GET /requests */
  listedRows: number;
  /** totalRequests of GET /metrics/summary (the requests_minute aggregate) */
  aggregateTotal: number;
  statuses: Record<string, number>;
  maxAnswerMs: number;
  recoveryMs: number | null;
  notes: Record<string, unknown>;
}

type Json = Record<string, unknown>;

/** What the checks need of a stack: one API listener and the brokers (FaultStack, ScaledStack). */
export interface StackLike {
  readonly apiUrl: string;
  readonly brokers: string[];
}

export async function apiGet<T = Json>(
  stack: StackLike,
  acct: FaultAccount,
  p: string,
  timeoutMs = 10_000,
): Promise<{ status: number; body: T }> {
  const res = await fetch(stack.apiUrl + p, {
    headers: { authorization: `Bearer ${acct.apiToken}` },
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/**
 * Waits until the processor group has committed everything in `traffic.requests` and the topic
 * stopped growing for 2 s (a produce that gave up on its HTTP answer may still land late).
 * Offsets are committed only after the ClickHouse insert, so afterwards every record is stored.
 */
export async function waitDrained(stack: StackLike, timeoutMs = 180_000): Promise<number> {
  const admin = lagAdmin(stack.brokers);
  await admin.connect();
  const t0 = Date.now();
  try {
    let quiet: { high: number; since: number } | undefined;
    await waitFor(
      async () => {
        const { lag, high } = await groupLag(admin, CONSUMER_GROUPS.processor, TOPICS.requests);
        if (lag > 0) {
          quiet = undefined;
          return false;
        }
        if (!quiet || quiet.high !== high) quiet = { high, since: Date.now() };
        return Date.now() - quiet.since >= 2000;
      },
      { timeoutMs, intervalMs: 250, what: 'processor lag 0' },
    );
  } finally {
    await admin.disconnect();
  }
  return Date.now() - t0;
}

/** A lag probe bound to the stack's current broker address (the port survives restarts). */
export async function withLag<T>(
  stack: StackLike,
  fn: (probe: () => Promise<GroupLag>) => Promise<T>,
): Promise<T> {
  const admin = lagAdmin(stack.brokers);
  await admin.connect();
  try {
    return await fn(() => groupLag(admin, CONSUMER_GROUPS.processor, TOPICS.requests));
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** The group's lag right now; retried while the broker is still electing leaders after a restart. */
export async function lagNow(stack: StackLike): Promise<GroupLag> {
  return withLag(stack, (probe) =>
    waitFor(() => probe(), { timeoutMs: 60_000, intervalMs: 250, what: 'lag probe' }),
  );
}

/** Waits until the processor group commits past `committed` (its first commit after a restart). */
export async function waitCommitPast(
  stack: StackLike,
  committed: number,
  timeoutMs = 180_000,
): Promise<void> {
  await withLag(stack, (probe) =>
    waitFor(async () => (await probe()).committed > committed, {
      timeoutMs,
      intervalMs: 200,
      what: 'a processor commit',
    }),
  );
}

export interface Collected {
  rows: Json[];
  rawRows: number;
  aggregateTotal: number;
}

/** Reads what the API shows for the bucket: exact count, every row (paged), the aggregate total. */
export async function collect(stack: StackLike, acct: FaultAccount, since: Date): Promise<Collected> {
  const base = `/v1/accounts/${acct.accountSid}`;
  const stats = await waitFor(
    async () => {
      const r = await apiGet<{ stored: number }>(
        stack,
        acct,
        `${base}/pipeline/stats?bucketSid=${acct.bucketSid}`,
      );
      return r.status === 200 ? r.body : undefined;
    },
    { timeoutMs: 60_000, what: 'pipeline stats' },
  );
  // The list pages at most MAX_PAGE_DEPTH rows deep (services/api/tables/pagination.ts), so it is read in
  // disjoint createdAt windows (both bounds inclusive, to the millisecond), halved while one holds
  // more; the load's records are created from `since` on. rawRows (the exact count) shows a row
  // outside the windows.
  const rows: Json[] = [];
  const readWindow = async (from: number, to: number): Promise<void> => {
    const part: Json[] = [];
    const range = `startDate=${new Date(from).toISOString()}&endDate=${new Date(to).toISOString()}`;
    for (let page = 1; ; page++) {
      if (page * 100 > MAX_PAGE_DEPTH) {
        const mid = Math.floor((from + to) / 2);
        await readWindow(from, mid);
        await readWindow(mid + 1, to);
        return;
      }
      const r = await apiGet<{ hasMore: boolean; records: Json[] }>(
        stack,
        acct,
        `${base}/buckets/${acct.bucketSid}/requests?limit=100&page=${page}&${range}`,
        30_000,
      );
      if (r.status !== 200) throw new Error(`list page ${page}: ${r.status} ${JSON.stringify(r.body)}`);
      part.push(...r.body.records);
      if (!r.body.hasMore) break;
    }
    rows.push(...part);
  };
  const last = Date.now() + 60_000;
  for (let from = since.getTime() - 60_000; from <= last; from += 30_000)
    await readWindow(from, Math.min(from + 29_999, last));
  const start = new Date(since.getTime() - 3600_000).toISOString();
  const end = new Date(Date.now() + 3600_000).toISOString();
  const summary = await apiGet<{ totalRequests: number }>(
    stack,
    acct,
    `${base}/metrics/summary?bucketSid=${acct.bucketSid}&startDate=${start}&endDate=${end}`,
  );
  if (summary.status !== 200)
    throw new Error(`metrics summary: ${summary.status} ${JSON.stringify(summary.body)}`);
  return { rows, rawRows: stats.stored, aggregateTotal: summary.body.totalRequests };
}

/** Compares what was acknowledged with what is stored, as sets of sids. */
export function compare(
  name: string,
  load: IngestLoad,
  got: Collected,
  extra: { recoveryMs?: number | null; maxAnswerMs?: number; notes?: Record<string, unknown> } = {},
): FaultFigures {
  const counts = new Map<string, number>();
  for (const r of got.rows) counts.set(String(r.sid), (counts.get(String(r.sid)) ?? 0) + 1);
  let found = 0;
  for (const sid of load.acked) if (counts.has(sid)) found++;
  let unackedStored = 0;
  let unexpected = 0;
  let duplicates = 0;
  let unackedDuplicates = 0;
  const duplicateSids: string[] = [];
  for (const [sid, n] of counts) {
    if (n > 1) {
      if (load.acked.has(sid)) duplicates += n - 1;
      else unackedDuplicates += n - 1;
      duplicateSids.push(`${sid}${load.acked.has(sid) ? ' (acknowledged)' : ''} x${n}`);
    }
    if (load.unacked.has(sid)) unackedStored++;
    else if (!load.acked.has(sid)) unexpected++;
  }
  return {
    case: name,
    at: new Date().toISOString(),
    acknowledged: load.acked.size,
    found,
    missing: load.acked.size - found,
    duplicates,
    unacknowledged: load.unacked.size,
    unacknowledgedStored: unackedStored,
    unacknowledgedDuplicates: unackedDuplicates,
    unexpected,
    rawRows: got.rawRows,
    listedRows: got.rows.length,
    aggregateTotal: got.aggregateTotal,
    statuses: load.statusCounts(),
    maxAnswerMs: Math.round(extra.maxAnswerMs ?? load.maxAnswerMs()),
    recoveryMs:
      extra.recoveryMs === undefined || extra.recoveryMs === null ? null : Math.round(extra.recoveryMs),
    notes: {
      ...(extra.notes ?? {}),
      ...(duplicateSids.length ? { duplicateSids: duplicateSids.slice(0, 5) } : {}),
    },
  };
}

/** Appends the figures to .cache/fault-runs/results.jsonl (docs/reliability.md's table) and prints them. */
export function record(fig: FaultFigures): void {
  fs.mkdirSync(FAULT_RUNS_DIR, { recursive: true });
  fs.appendFileSync(path.join(FAULT_RUNS_DIR, 'results.jsonl'), `${JSON.stringify(fig)}\n`);
  console.log(`[fault] ${JSON.stringify(fig)}`);
}

/** The guarantee: every acknowledged record exactly once, nothing unknown, aggregates = raw rows. */
export function expectExactlyOnce(fig: FaultFigures, load: IngestLoad): void {
  expect(load.rejected.size, 'valid records rejected').toBe(0);
  expect(fig.acknowledged, 'records acknowledged').toBeGreaterThan(0);
  expect(fig.missing, 'acknowledged records missing').toBe(0);
  expect(fig.duplicates, 'acknowledged records stored more than once').toBe(0);
  expect(fig.unexpected, 'stored records never sent').toBe(0);
  expect(fig.listedRows, 'listed rows = raw count').toBe(fig.rawRows);
  expect(fig.rawRows, 'raw count = acknowledged + unacknowledged rows stored').toBe(
    fig.acknowledged + fig.unacknowledgedStored + fig.unacknowledgedDuplicates,
  );
  expect(fig.aggregateTotal, 'aggregate total = raw count').toBe(fig.rawRows);
}
