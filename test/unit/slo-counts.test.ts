import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredRecord } from '../../services/processor/pipeline.js';
import { RequestsWriter } from '../../services/processor/requests.writer.js';
import { toRow } from '../../services/processor/row.mapper.js';
import {
  createClickHouse,
  migrateClickHouse,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import {
  sloBurnCounts,
  sloCounts,
  thresholdIndex,
  type SloDefinition,
} from '../../services/slo/slo.query.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';

/**
 * SLO counts (services/slo/slo.query.ts) against a real chDB: the daily series and every burn
 * window, read from day and hour blocks of requests_key_rollup plus edge minutes, equal the sums
 * of the requests_minute rows of each day and window, for SLOs of both SLI kinds narrowed in every
 * way, at instants whose windows start inside minutes, hours and days.
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-slo-counts-'));
const cfg = embeddedClickHouse(dir);
const log = pino({ level: 'silent' });
let ch: ClickHouseClient;
const NOW = Math.floor(Date.now() / 60_000) * 60_000;
const ACCOUNT = 'acc_slocounts';
const BUCKET = 'bkt_slocounts';
const WINDOWS = [300, 1800, 3600, 21_600, 259_200];

beforeAll(async () => {
  ch = createClickHouse(cfg);
  await migrateClickHouse(ch, cfg, log);
  // 3,000 records over the last 8 days, every 3 min 50 s: 3 environments (one of them none),
  // 3 endpoints, 2 methods, 5xx, 4xx and durations around the latency thresholds below.
  const records = Array.from(
    { length: 3000 },
    (_, i) =>
      ({
        sid: `req_${String(i).padStart(27, '0')}`,
        accountSid: ACCOUNT,
        bucketSid: BUCKET,
        environmentSid: ['prod01', 'stag01', ''][i % 3],
        contextSid: null,
        direction: 'in',
        createdAt: new Date(NOW + 30_000 - i * 230_000).toISOString(),
        receivedAt: new Date().toISOString(),
        endpoint: `/v1/things/${i % 3}`,
        request: {
          method: i % 2 ? 'post' : 'get',
          host: 'api.example.com',
          path: `/v1/things/${i}`,
          body: null,
        },
        response: { statusCode: i % 13 === 0 ? 503 : i % 5 === 0 ? 404 : 200, body: null },
        timings: i % 17 === 0 ? {} : { duration: 5 + ((i * 37) % 400) },
        tags: [],
        firewall: { blocked: false },
      }) as StoredRecord,
  );
  const writer = new RequestsWriter(ch);
  for (let i = 0; i < records.length; i += 500)
    await writer.insert(
      records.slice(i, i + 500).map((r, j) => toRow(r, 0, i + j)),
      `unit:slo-counts:${i}`,
    );
}, 120_000);

afterAll(async () => {
  await ch?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The same figures summed from requests_minute alone, minute by minute. */
async function fromMinutes(slo: SloDefinition, windowDays: number, now: Date) {
  const until = Math.floor(now.getTime() / 60_000) * 60;
  const since = Math.floor(until / 86_400) * 86_400 - (windowDays - 1) * 86_400;
  const total = slo.sli.kind === 'latency' ? 'duration_count' : 'requests';
  const bad =
    slo.sli.kind === 'latency'
      ? `(duration_count - arraySum(mapValues(mapFilter((k, v) -> k = -32768 OR k <= ${thresholdIndex(slo.sli.thresholdMs)}, duration_hist))))`
      : 'if(status_code >= 500, requests, 0)';
  const where = [
    `account_sid = '${slo.accountSid}'`,
    `bucket_sid = '${slo.bucketSid}'`,
    slo.environmentSid ? `environment_sid IN ('', '${slo.environmentSid}')` : '1',
    slo.endpoint ? `endpoint = '${slo.endpoint}'` : '1',
    slo.method ? `method = '${slo.method}'` : '1',
    `toUInt32(minute) <= ${until}`,
  ].join(' AND ');
  const sums = async (cond: string) => {
    const [r] = await (
      await ch.query({
        query: `SELECT toInt64(sum(${total})) AS t, toInt64(sum(${bad})) AS b FROM requests_minute WHERE ${where} AND ${cond}`,
        format: 'JSONEachRow',
      })
    ).json<{ t: number; b: number }>();
    return { total: Number(r!.t), bad: Number(r!.b) };
  };
  const days = [];
  for (let d = since; d <= until; d += 86_400)
    days.push({
      day: new Date(d * 1000).toISOString().slice(0, 10),
      ...(await sums(`toUInt32(minute) >= ${d} AND toUInt32(minute) < ${d + 86_400}`)),
    });
  const burn = new Map();
  for (const w of WINDOWS) burn.set(w, await sums(`toUInt32(minute) >= ${until - w + 60}`));
  const window = await sums(`toUInt32(minute) >= ${since}`);
  return { window, days, burn };
}

describe('SLO counts from day and hour blocks (chDB)', () => {
  it('equal the minute rows for every day and burn window, both SLI kinds, every narrowing', async () => {
    const base = { accountSid: ACCOUNT, bucketSid: BUCKET };
    const slos: SloDefinition[] = [
      { ...base, environmentSid: null, endpoint: null, method: null, sli: { kind: 'availability' } },
      { ...base, environmentSid: 'prod01', endpoint: null, method: null, sli: { kind: 'availability' } },
      {
        ...base,
        environmentSid: null,
        endpoint: '/v1/things/1',
        method: 'POST',
        sli: { kind: 'availability' },
      },
      {
        ...base,
        environmentSid: null,
        endpoint: null,
        method: null,
        sli: { kind: 'latency', thresholdMs: 100 },
      },
      {
        ...base,
        environmentSid: 'stag01',
        endpoint: '/v1/things/2',
        method: 'GET',
        sli: { kind: 'latency', thresholdMs: 250 },
      },
    ];
    // Now, and instants whose windows start inside a minute, an hour and a day.
    const instants = [
      NOW + 1000,
      NOW - 3 * 3_600_000 - 17 * 60_000 + 37_000,
      NOW - 2 * 86_400_000 - 5 * 3_600_000,
    ];
    let compared = 0;
    for (const slo of slos)
      for (const at of instants)
        for (const windowDays of [1, 7]) {
          const now = new Date(at);
          const got = await sloCounts(ch, slo, windowDays, WINDOWS, now);
          const want = await fromMinutes(slo, windowDays, now);
          const what = `${JSON.stringify(slo.sli)} ${slo.environmentSid} ${slo.endpoint} at ${now.toISOString()} over ${windowDays} d`;
          expect(got.days, what).toEqual(want.days);
          expect(got.window, what).toEqual(want.window);
          expect(got.burn, what).toEqual(want.burn);
          compared++;
        }
    expect(compared).toBe(30);
    // The set has traffic in every window checked: the comparisons are not of zeros.
    const all = await sloCounts(ch, slos[0]!, 7, WINDOWS, new Date(NOW + 1000));
    for (const w of WINDOWS) expect(all.burn.get(w)!.total, `${w} s`).toBeGreaterThan(0);
    expect(all.window.bad).toBeGreaterThan(0);
  }, 120_000);

  it('of every SLO of a bucket in one query equal each SLO counted on its own', async () => {
    const base = { accountSid: ACCOUNT, bucketSid: BUCKET };
    const slos = [
      {
        sid: 'a',
        ...base,
        environmentSid: null,
        endpoint: null,
        method: null,
        sli: { kind: 'availability' },
      },
      {
        sid: 'b',
        ...base,
        environmentSid: 'prod01',
        endpoint: '/v1/things/0',
        method: null,
        sli: { kind: 'availability' },
      },
      {
        sid: 'c',
        ...base,
        environmentSid: null,
        endpoint: '/v1/things/1',
        method: 'POST',
        sli: { kind: 'latency', thresholdMs: 100 },
      },
      {
        sid: 'd',
        ...base,
        environmentSid: 'stag01',
        endpoint: null,
        method: 'GET',
        sli: { kind: 'latency', thresholdMs: 250 },
      },
      {
        sid: 'e',
        ...base,
        environmentSid: null,
        endpoint: null,
        method: null,
        sli: { kind: 'latency', thresholdMs: 100 },
      },
    ] as const satisfies readonly (SloDefinition & { sid: string })[];
    for (const at of [
      NOW + 1000,
      NOW - 3 * 3_600_000 - 17 * 60_000 + 37_000,
      NOW - 2 * 86_400_000 - 5 * 3_600_000,
    ]) {
      const now = new Date(at);
      const all = await sloBurnCounts(ch, slos, WINDOWS, now);
      expect([...all.keys()]).toEqual(['a', 'b', 'c', 'd', 'e']);
      for (const slo of slos) {
        const alone = await sloCounts(ch, slo, 1, WINDOWS, now);
        expect(all.get(slo.sid), `${slo.sid} at ${now.toISOString()}`).toEqual(alone.burn);
      }
    }
    await expect(
      sloBurnCounts(ch, [slos[0], { ...slos[1], bucketSid: 'bkt_other' }], WINDOWS, new Date()),
    ).rejects.toThrow('one bucket');
  }, 120_000);
});
