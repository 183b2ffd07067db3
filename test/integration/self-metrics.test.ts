import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/shared/config.js';
import { startMetricsListener } from '../../services/shared/metrics.js';
import { testStackMode } from '../helpers/stack-mode.js';
import { api, ingest, listAllRequests, makeRecord, newAccount, testEnv, waitFor } from '../helpers/client.js';

/**
 * Tapline's own Prometheus metrics (docs/operations.md), read from the running service of the test
 * stack: the API listener answers for the main process (processor, actions, scheduler, API), the
 * ingest listener for the ingest worker. The text is parsed strictly (below) and the counters move
 * with traffic: records accepted, one rejected, one excluded, the rest stored.
 */

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * A strict reader of the Prometheus text format 0.0.4: every line is empty, `# HELP name text`,
 * `# TYPE name counter|gauge|histogram|summary|untyped`, or `name{label="value",…} number`, where a
 * sample belongs to the family its TYPE line declared before it; anything else throws.
 */
function parsePrometheus(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
  const help = new RegExp(`^# HELP (${NAME}) .*$`);
  const type = new RegExp(`^# TYPE (${NAME}) (counter|gauge|histogram|summary|untyped)$`);
  const sample = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: -?\\d+)?$`);
  const label = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"(?:,|$)/;
  const lines = text.split('\n');
  expect(lines.at(-1), 'the text ends with a newline').toBe('');
  for (const line of lines.slice(0, -1)) {
    // The format ignores empty lines (prom-client writes one between families).
    if (line === '' || help.test(line)) continue;
    const t = type.exec(line);
    if (t) {
      expect(types.has(t[1]!), `one TYPE line for ${t[1]}`).toBe(false);
      types.set(t[1]!, t[2]!);
      continue;
    }
    const s = sample.exec(line);
    if (!s) throw new Error(`not a Prometheus text line: ${JSON.stringify(line)}`);
    const [, name, body = '', raw] = s;
    const family = [...types.keys()].find(
      (f) =>
        name === f ||
        (/^(histogram|summary)$/.test(types.get(f)!) &&
          /^_(bucket|sum|count)$/.test(name!.slice(f.length)) &&
          name!.startsWith(f)),
    );
    if (!family) throw new Error(`sample ${name} has no TYPE line before it`);
    const labels: Record<string, string> = {};
    for (let rest = body; rest.length;) {
      const m = label.exec(rest);
      if (!m) throw new Error(`bad labels in ${JSON.stringify(line)}`);
      labels[m[1]!] = m[2]!.replace(/\\n/g, '\n').replace(/\\(["\\])/g, '$1');
      rest = rest.slice(m[0].length);
    }
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : raw === 'NaN' ? NaN : Number(raw);
    if (raw !== 'NaN' && Number.isNaN(value)) throw new Error(`bad value in ${JSON.stringify(line)}`);
    samples.push({ name: name!, labels, value });
  }
  return { types, samples };
}

/** The sum of the samples of `name` whose labels include `labels`. */
function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);
}

async function scrape(url: string, token: string | undefined = testEnv().serviceEnv.METRICS_TOKEN) {
  const res = await fetch(`${url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

async function read(url: string) {
  const res = await scrape(url);
  expect(res.status, res.text).toBe(200);
  expect(res.type).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheus(res.text);
}

describe('GET /metrics of the running service', () => {
  it('needs the bearer token METRICS_TOKEN on the API and ingest listeners', async () => {
    const { apiUrl, ingestUrl } = testEnv();
    for (const url of [apiUrl, ingestUrl]) {
      for (const token of [null, 'not-the-metrics-token']) {
        const res = await scrape(url, token ?? '');
        expect(res.status, url).toBe(401);
        expect(JSON.parse(res.text)).toEqual({
          success: false,
          error: {
            code: 'INVALID_TOKEN',
            message: 'GET /metrics needs the bearer token METRICS_TOKEN',
            details: {},
          },
        });
      }
    }
  });

  it('parses as Prometheus text and its counters move with traffic', async () => {
    const { apiUrl, ingestUrl } = testEnv();
    const a = await newAccount();
    const path = `/metrics-test-excluded-${a.bucketSid}`;
    const rule = await api(a.apiToken).post(`/v1/accounts/${a.accountSid}/exclusions`, {
      name: 'metrics test',
      pathPattern: path,
      method: '*',
    });
    expect(rule.status, rule.text).toBe(201);

    const ingest0 = (await read(ingestUrl)).samples;
    const main0 = await read(apiUrl);
    expect(main0.types.get('tapline_processor_records_total')).toBe('counter');
    expect(main0.types.get('tapline_processor_block_records')).toBe('histogram');
    expect(main0.types.get('tapline_kafka_consumer_lag')).toBe('gauge');
    expect(main0.types.get('process_cpu_user_seconds_total')).toBe('counter');

    // Sixteen records kept (one message: the processor times the steps of one record in eight, so
    // two of them at least), one the rule excludes (sent until the rule has reached the
    // processor), one rejected by ingest (no request).
    const kept = Array.from({ length: 16 }, (_, i) => makeRecord({ contextSid: `kept-${i + 1}` }));
    const res = await ingest(a.bucketSid, a.apiToken, [...kept, { response: { statusCode: 200 } }]);
    expect(res.status, res.text).toBe(202);
    expect(res.body.accepted).toBe(16);
    expect(res.body.rejected.map((r) => r.error.code)).toEqual(['VALIDATION_ERROR']);
    let excludedSent = 0;
    await waitFor(
      async () => {
        const sent = await ingest(a.bucketSid, a.apiToken, [
          makeRecord({ request: { method: 'GET', path } }),
        ]);
        expect(sent.status, sent.text).toBe(202);
        excludedSent++;
        const m = await read(apiUrl);
        const dropped =
          total(m.samples, 'tapline_processor_dropped_records_total', { reason: 'excluded' }) -
          total(main0.samples, 'tapline_processor_dropped_records_total', { reason: 'excluded' });
        return dropped > 0 ? m : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500, what: 'an excluded record counted' },
    );
    const stored = await listAllRequests(a.apiToken, a.accountSid, a.bucketSid);
    expect(stored.map((r) => r.contextSid).sort()).toEqual(kept.map((r) => r.contextSid).sort());
    const m = (await waitFor(
      async () => {
        const r = await read(apiUrl);
        const storedNow =
          total(r.samples, 'tapline_processor_records_total', { outcome: 'stored' }) -
          total(main0.samples, 'tapline_processor_records_total', { outcome: 'stored' });
        return storedNow >= 16 ? r : undefined;
      },
      { timeoutMs: 30_000, what: 'the stored records counted' },
    ))!.samples;
    const moved = (name: string, labels: Record<string, string> = {}) =>
      total(m, name, labels) - total(main0.samples, name, labels);

    // The processor: records by outcome and drop reason, blocks by trigger, block sizes, step
    // time, ClickHouse inserts.
    expect(moved('tapline_processor_records_total', { outcome: 'dropped' })).toBeGreaterThanOrEqual(1);
    expect(moved('tapline_processor_dropped_records_total', { reason: 'excluded' })).toBeGreaterThanOrEqual(
      1,
    );
    const blocks = moved('tapline_processor_blocks_total');
    expect(blocks).toBeGreaterThanOrEqual(1);
    for (const s of m.filter((x) => x.name === 'tapline_processor_blocks_total'))
      expect(['size', 'time', 'hold']).toContain(s.labels.trigger);
    expect(moved('tapline_processor_block_records_count')).toBe(blocks);
    expect(moved('tapline_processor_block_records_sum')).toBeGreaterThanOrEqual(16);
    const steps = new Set(
      m.filter((x) => x.name === 'tapline_processor_step_seconds_total').map((x) => x.labels.step),
    );
    expect([...steps].sort()).toEqual(['endpoint', 'exclusions', 'identify', 'redact', 'triggers']);
    // One insert per block that holds rows (a block of excluded records only inserts nothing).
    const inserts = moved('tapline_clickhouse_insert_duration_seconds_count', {
      table: 'requests',
      outcome: 'ok',
    });
    expect(inserts).toBeGreaterThanOrEqual(1);
    expect(inserts).toBeLessThanOrEqual(blocks);
    // Consumer lag per partition of the processor's group, read from Kafka at the scrape.
    const lag = m.filter((x) => x.name === 'tapline_kafka_consumer_lag' && x.labels.group === 'processor');
    expect(lag.map((x) => x.labels.topic)).toContain('traffic.requests');
    for (const x of lag) expect(x.value).toBeGreaterThanOrEqual(0);
    // The embedded engine's memory (chDB in this process), read from its system.metrics at the
    // scrape; with a ClickHouse server (the containers stack) the server reports its own.
    const chMemory = new Map(
      m.filter((x) => x.name === 'tapline_clickhouse_memory_bytes').map((x) => [x.labels.kind, x.value]),
    );
    if (testStackMode().mode === 'local') {
      expect([...chMemory.keys()].sort()).toEqual([
        'mark_cache',
        'merges',
        'primary_index_cache',
        'query_condition_cache',
        'tracked',
      ]);
      // The engine has stored and read blocks by now: it tracks megabytes, caches included.
      expect(chMemory.get('tracked')).toBeGreaterThan(1024 * 1024);
      expect(chMemory.get('tracked')).toBeGreaterThanOrEqual(chMemory.get('mark_cache')!);
    } else expect(chMemory.size).toBe(0);
    // The API listener's own requests (the list above) in its latency histogram.
    expect(
      total(m, 'tapline_http_request_duration_seconds_count', {
        listener: 'api',
        route: '/v1/accounts/:accountSid/buckets/:bucketSid/requests',
        status_code: '200',
      }),
    ).toBeGreaterThanOrEqual(1);

    // The ingest worker: records accepted and rejected by reason, Kafka publish latency, its
    // listener's latency histogram.
    const i1 = (await read(ingestUrl)).samples;
    const movedIngest = (name: string, labels: Record<string, string> = {}) =>
      total(i1, name, labels) - total(ingest0, name, labels);
    expect(movedIngest('tapline_ingest_records_total', { outcome: 'accepted' })).toBeGreaterThanOrEqual(
      16 + excludedSent,
    );
    expect(
      movedIngest('tapline_ingest_records_total', { outcome: 'rejected', reason: 'VALIDATION_ERROR' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      movedIngest('tapline_kafka_publish_duration_seconds_count', {
        topic: 'traffic.requests',
        outcome: 'ok',
      }),
    ).toBeGreaterThanOrEqual(1 + excludedSent);
    expect(
      movedIngest('tapline_http_request_duration_seconds_count', { listener: 'ingest', status_code: '202' }),
    ).toBeGreaterThanOrEqual(1 + excludedSent);
  });
});

describe('the metrics listener of a process without an API or ingest listener', () => {
  const get = (port: number, path: string, token?: string) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.get(
        { host: '127.0.0.1', port, path, headers: token ? { authorization: `Bearer ${token}` } : {} },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on('error', reject);
    });

  it('serves GET /metrics on METRICS_HOST:METRICS_PORT, with the token when one is set', async () => {
    const log = pino({ level: 'silent' });
    const token = 'metrics-listener-test-token';
    const open = await startMetricsListener(parseConfig({ METRICS_PORT: '0' }), log);
    const locked = await startMetricsListener(parseConfig({ METRICS_PORT: '0', METRICS_TOKEN: token }), log);
    if (!open || !locked) throw new Error('a metrics listener on a free port did not start');
    try {
      const openPort = (open.address() as AddressInfo).port;
      const lockedPort = (locked.address() as AddressInfo).port;
      // A port already taken (a second role process on the same METRICS_PORT): no listener, no failure.
      expect(await startMetricsListener(parseConfig({ METRICS_PORT: String(openPort) }), log)).toBeNull();
      const plain = await get(openPort, '/metrics');
      expect(plain.status).toBe(200);
      expect(parsePrometheus(plain.text).types.get('tapline_processor_records_total')).toBe('counter');
      expect((await get(openPort, '/other')).status).toBe(404);
      const refused = await get(lockedPort, '/metrics');
      expect(refused.status).toBe(401);
      expect(JSON.parse(refused.text)).toMatchObject({ success: false, error: { code: 'INVALID_TOKEN' } });
      expect((await get(lockedPort, '/metrics', token)).status).toBe(200);
    } finally {
      await Promise.all([open, locked].map((s) => new Promise((r) => s.close(r))));
    }
  });
});
