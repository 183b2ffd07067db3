import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import { TaplineCore } from '../../sdk/node/src/client.js';
import { newRecordSid } from '../../sdk/node/src/sid.js';
import type { CapturedRecord } from '../../sdk/node/src/types.js';

/** A local HTTP ingest: serves the SDK settings it is given, gunzips every batch it receives. */
async function ingest(settings: Record<string, unknown>) {
  const batches: CapturedRecord[][] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET') {
        res.end(JSON.stringify(settings));
        return;
      }
      const body = JSON.parse(gunzipSync(Buffer.concat(chunks)).toString('utf8')) as {
        records: CapturedRecord[];
      };
      batches.push(body.records);
      res.statusCode = 202;
      res.end(JSON.stringify({ accepted: body.records.length, rejected: [] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, batches, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function record(i: number): CapturedRecord {
  return {
    sid: newRecordSid(),
    direction: 'in',
    createdAt: new Date(0).toISOString(),
    request: {
      host: 'api.test',
      method: 'POST',
      path: `/items/${i}`,
      port: 443,
      url: `https://api.test/items/${i}`,
      queryString: {},
      headers: { 'content-type': 'application/json' },
      // Multi-byte UTF-8 (2, 3 and 4 bytes) and a long body, so lines differ in byte length.
      body: JSON.stringify({ i, name: `café ✓ 🚀 ${'x'.repeat(i % 3000)}`, secret: `s-${i}` }),
      contentType: 'application/json',
      size: 0,
    },
    response: { statusCode: 200, headers: {}, contentType: null, size: 0 },
    timings: { duration: 1 },
    tags: [],
  };
}

const open: { core?: TaplineCore; close?: () => Promise<void> }[] = [];
afterEach(async () => {
  for (const o of open.splice(0)) {
    await o.core?.close(100);
    await o.close?.();
  }
});

async function started(settings: Record<string, unknown>) {
  const ing = await ingest(settings);
  const core = new TaplineCore({
    endpoint: ing.url,
    bucketSid: 'bkt_test',
    token: 't',
    handleProcessEvents: false,
    flushIntervalMs: 60_000,
  });
  open.push({ core, close: ing.close });
  while (!core.stats().settingsLoaded) await new Promise((r) => setTimeout(r, 10));
  return { core, ...ing };
}

describe('sdk: batches', () => {
  it('every queued record arrives once, in order, byte for byte, in batches of at most 500', async () => {
    const { core, batches } = await started({ redactAt: 'client', settings: {} });
    const sent = Array.from({ length: 1234 }, (_, i) => record(i));
    for (const r of sent) core.enqueue(structuredClone(r));
    // flush() resolves only once nothing is queued, being batched or in flight.
    expect(await core.flush(20_000)).toBe(true);
    const got = batches.flat();
    expect(batches.every((b) => b.length <= 500)).toBe(true);
    expect(got.map((r) => r.sid)).toEqual(sent.map((r) => r.sid));
    expect(got.map((r) => r.request.body)).toEqual(sent.map((r) => r.request.body));
    expect(core.stats()).toMatchObject({ sent: 1234, queuedRecords: 0, queuedBytes: 0, dropped: 0 });
  });

  it('a redaction that arrives while records wait is applied to their queued bytes before they leave', async () => {
    const { core, batches } = await started({ redactAt: 'client', settings: {} });
    // The ingest is not asked until flush: records wait in the queue under the first rules.
    for (let i = 0; i < 20; i++) core.enqueue(record(i));
    core.applySettings({
      redactAt: 'client',
      settings: {},
      redactionRules: [{ field: '$.request.body.secret', action: 'mask' }],
    });
    expect(await core.flush(20_000)).toBe(true);
    const got = batches.flat();
    expect(got).toHaveLength(20);
    for (const r of got) {
      const raw = r.request.body;
      const body = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { secret: string; name: string };
      expect(body.secret).not.toMatch(/^s-/);
      expect(body.name.startsWith('café ✓ 🚀')).toBe(true);
    }
  });
});
