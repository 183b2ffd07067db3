/**
 * Shared setup of the in-process ClickHouse scripts (ch-decompose, insert-fixed-cost, merge-cost,
 * hot-paths): a fresh chDB directory under `.cache/` with the project's migrations, and the bench's
 * records as the processor holds them before `toRow` (sid, account, bucket, receive time, endpoint).
 */
import fs from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import type { StoredRecord } from '../../services/processor/pipeline.js';
import { endpointTemplate } from '../../services/processor/steps/endpoint.step.js';
import {
  createClickHouse,
  migrateClickHouse,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import { newSid } from '../../services/shared/ids.js';
import { ROOT } from './bench-stack.js';
import { ingestRecord, rng } from './records.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';

/** A new, migrated chDB directory `.cache/<name>` (removed first if it exists). */
export async function scratchClickHouse(name: string): Promise<ClickHouseClient> {
  const dir = path.join(ROOT, '.cache', name);
  fs.rmSync(dir, { recursive: true, force: true });
  const cfg = embeddedClickHouse(dir);
  const ch = createClickHouse(cfg);
  await migrateClickHouse(ch, cfg, pino({ level: 'warn' }));
  return ch;
}

/** `count` deterministic records of `buckets` buckets of one account, as the processor's steps leave them. */
export function processorRecords(
  count: number,
  opts: { seed?: number; account?: string; buckets?: number } = {},
) {
  const r = rng(opts.seed ?? 7);
  const receivedAt = new Date().toISOString();
  const account = opts.account ?? 'acc_x';
  const buckets = opts.buckets ?? 4;
  return Array.from({ length: count }, (_, i) => {
    const rec = ingestRecord(r, { environments: ['prod01', 'stag01', 'dev001'] });
    return Object.assign(rec, {
      sid: newSid('request'),
      accountSid: account,
      bucketSid: `bkt_x${i % buckets}`,
      receivedAt,
      contextSid: null,
      firewall: { blocked: false },
      endpoint: endpointTemplate(String((rec.request as Record<string, unknown>).path)),
    }) as unknown as StoredRecord;
  });
}

/** Process CPU (Node + chDB threads) in milliseconds. */
export function cpuMs(): number {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
}

/** Waits (up to 30 s) until no merge runs, so a measurement does not pay for an earlier insert's. */
export async function noMerges(ch: ClickHouseClient): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const rs = await ch.query({ query: 'SELECT count() AS n FROM system.merges', format: 'JSONEachRow' });
    const [row] = await rs.json<{ n: number }>();
    if (Number(row!.n) === 0) return;
    await new Promise((res) => setTimeout(res, 100));
  }
}
