import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Kafka, logLevel, Partitioners, type Producer } from 'kafkajs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../services/api/app.js';
import { normalizeRecords } from '../../services/ingest/record.normalizer.js';
import { ok, type Step } from '../../services/processor/pipeline.js';
import { ProcessorConsumer } from '../../services/processor/processor.consumer.js';
import { RequestsWriter } from '../../services/processor/requests.writer.js';
import { PROCESSOR_STEPS } from '../../services/processor/steps/index.js';
import {
  createClickHouse,
  migrateClickHouse,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import { parseConfig } from '../../services/shared/config.js';
import { CredentialStore } from '../../services/shared/credentials.js';
import { makeRecord, newAccount, testEnv, testPool, waitFor, type TestAccount } from '../helpers/client.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';

/**
 * A step added in the test goes through the processor's parts (block source on a topic of its own
 * in the stack's Kafka, decoder, steps, sink into a chDB of its own), and the API built on that
 * chDB serves what the step did. The step returns `ok` with a copy of the record and says nothing
 * about storage: a new top-level field and a rewritten member of `request` are written into the
 * received line, a rewritten top-level field the line holds makes the sink serialise the record.
 */

const tag = randomBytes(4).toString('hex');
const topic = `test.requests.steps.${tag}`;
const dlqTopic = `test.requests.steps.dlq.${tag}`;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-added-step-'));
const chCfg = embeddedClickHouse(dir);
const log = pino({ level: 'silent' });
const cfg = parseConfig({ SECRETS_KEY: 'ab'.repeat(32), PROCESSOR_FLUSH_MS: '50', PROCESSOR_HOLD_MS: '250' });

let ch: ClickHouseClient;
let kafka: Kafka;
let producer: Producer;
let processor: ProcessorConsumer | undefined;
let app: FastifyInstance;
let credentials: CredentialStore;
let acct: TestAccount;

/**
 * The test's own step: tags every record, rewrites the path of records of context `rewrite` and
 * the note of records of context `renote`, each on a copy, and returns `ok`.
 */
const REVIEWED = [{ key: 'reviewed', value: 'test-step' }];
const reviewStep: Step = (record) => {
  const tagged = { ...record, tags: REVIEWED };
  if (record.contextSid === 'rewrite')
    return ok({ ...tagged, request: { ...record.request, path: '/rewritten' } });
  if (record.contextSid === 'renote') return ok({ ...tagged, note: 'reviewed' });
  return ok(tagged);
};

beforeAll(async () => {
  ch = createClickHouse(chCfg);
  await migrateClickHouse(ch, chCfg, log);
  kafka = new Kafka({
    clientId: 'added-step-test',
    brokers: testEnv().kafkaBrokers,
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: [
      { topic, numPartitions: 1, replicationFactor: 1 },
      { topic: dlqTopic, numPartitions: 1, replicationFactor: 1 },
    ],
  });
  await admin.disconnect();
  producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  acct = await newAccount();
  processor = new ProcessorConsumer({
    kafka,
    producer,
    writer: new RequestsWriter(ch),
    cfg,
    log,
    steps: [...PROCESSOR_STEPS, reviewStep],
    topic,
    groupId: `added-step-${tag}`,
    dlqTopic,
  });
  await processor.start();
  credentials = new CredentialStore(testPool(), log);
  app = await buildApp({ cfg, log, pg: testPool(), ch, credentials, ready: async () => ({}) });
  await app.ready();
}, 180_000);

afterAll(async () => {
  await processor?.stop();
  await producer?.disconnect();
  await app?.close();
  credentials?.stop();
  await ch?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Records as ingest accepts them, produced as ingest produces them (version 2 message). */
async function produce(records: Record<string, unknown>[]): Promise<Record<string, unknown>[]> {
  const { accepted, rejected } = normalizeRecords(records, acct.bucketSid);
  expect(rejected).toEqual([]);
  const head = JSON.stringify({ v: 2, accountSid: acct.accountSid, bucketSid: acct.bucketSid });
  const value = [head, ...accepted.map((r) => JSON.stringify(r))].join('\n');
  await producer.send({ topic, acks: -1, messages: [{ key: acct.bucketSid, value }] });
  return accepted;
}

async function storedText(sid: string): Promise<string | undefined> {
  const rs = await ch.query({
    query: 'SELECT record FROM requests WHERE sid = {sid:String}',
    query_params: { sid },
    format: 'JSONEachRow',
  });
  const rows = await rs.json<{ record: string }>();
  return rows[0]?.record;
}

async function servedRecord(sid: string): Promise<Record<string, unknown>> {
  const res = await app.inject({
    method: 'GET',
    url: `/v1/accounts/${acct.accountSid}/buckets/${acct.bucketSid}/requests/${sid}`,
    headers: { authorization: `Bearer ${acct.apiToken}` },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe('a step added to the processor', () => {
  it('its content changes and added field are stored and served by the API', async () => {
    const [kept, rewritten, sent, renoted] = await produce([
      makeRecord({ contextSid: 'kept' }),
      makeRecord({ contextSid: 'rewrite' }),
      makeRecord({ contextSid: 'sent-endpoint', endpoint: '/users/:id/orders' }),
      makeRecord({ contextSid: 'renote', note: 'as sent' }),
    ]);
    const texts = await waitFor(
      async () => {
        const all = await Promise.all(
          [kept!, rewritten!, sent!, renoted!].map((r) => storedText(r.sid as string)),
        );
        return all.every(Boolean) ? (all as string[]) : undefined;
      },
      { timeoutMs: 60_000, what: 'the four records stored' },
    );

    // Kept: the ingest line with the header's accountSid, the derived endpoint and the step's field
    // spliced in (the line already holds bucketSid); each key once.
    const keptLine = JSON.stringify(kept);
    expect(texts[0]).toBe(
      `${keptLine.slice(0, -1)},"accountSid":"${acct.accountSid}","endpoint":"/users/{id}/orders","tags":${JSON.stringify(REVIEWED)}}`,
    );
    // Rewritten path: the step's rewrite stored, written into the line in place.
    const r = JSON.parse(texts[1]!);
    expect(r.request.path).toBe('/rewritten');
    expect(r).toMatchObject({ accountSid: acct.accountSid, bucketSid: acct.bucketSid, tags: REVIEWED });
    const rewrittenLine = JSON.stringify({
      ...rewritten,
      request: { ...rewritten!.request!, path: '/rewritten' },
    });
    expect(texts[1]).toBe(
      `${rewrittenLine.slice(0, -1)},"accountSid":"${acct.accountSid}","endpoint":"/users/{id}/orders","tags":${JSON.stringify(REVIEWED)}}`,
    );
    // A rewritten field the line holds: the record serialised, with the step's value once.
    expect(JSON.parse(texts[3]!)).toMatchObject({ note: 'reviewed', tags: REVIEWED, contextSid: 'renote' });
    expect(texts[3]).not.toContain('as sent');
    // An endpoint the client sent stays as the line has it.
    expect(JSON.parse(texts[2]!)).toMatchObject({
      endpoint: '/users/:id/orders',
      accountSid: acct.accountSid,
    });
    for (const t of texts) expect((t.match(/"bucketSid":/g) ?? []).length).toBe(1);

    const a = await servedRecord(kept!.sid as string);
    expect(a).toMatchObject({
      sid: kept!.sid,
      accountSid: acct.accountSid,
      bucketSid: acct.bucketSid,
      endpoint: '/users/{id}/orders',
      workflowExecutions: null,
      contextSid: 'kept',
      tags: REVIEWED,
    });
    const b = await servedRecord(rewritten!.sid as string);
    expect(b.request).toMatchObject({ path: '/rewritten' });
    expect((await servedRecord(renoted!.sid as string)).note).toBe('reviewed');
    expect(b.tags).toEqual(REVIEWED);
    expect(b).toMatchObject({ accountSid: acct.accountSid, endpoint: '/users/{id}/orders' });
    // The step's tag is a column too (tags are searchable).
    const rs = await ch.query({
      query: 'SELECT tags FROM requests WHERE sid = {sid:String}',
      query_params: { sid: kept!.sid as string },
      format: 'JSONEachRow',
    });
    expect(await rs.json()).toEqual([{ tags: { reviewed: 'test-step' } }]);
    // The rewritten path is the row's column too.
    const paths = await ch.query({
      query: 'SELECT path FROM requests WHERE sid = {sid:String}',
      query_params: { sid: rewritten!.sid as string },
      format: 'JSONEachRow',
    });
    expect(await paths.json()).toEqual([{ path: '/rewritten' }]);
    // The API returns what is stored: the record text, with storedAt and note, and the interface's (docs/processing.md)
    // nullable fields the record left out as null (this record has no traces).
    const { storedAt, note, ...rest } = a;
    expect(typeof storedAt).toBe('string');
    expect(note).toBeNull();
    expect(rest).toEqual({ ...JSON.parse(texts[0]!), workflowExecutions: null, traces: null });
  });
});

describe('a row stored before the processor spliced the added fields in', () => {
  it('is served with accountSid, bucketSid and endpoint from its columns', async () => {
    // Older versions stored an unchanged record's ingest line as it came (no accountSid, bucketSid
    // or endpoint in the text) and kept those three in columns only.
    const [old] = normalizeRecords([makeRecord({ contextSid: 'older-row' })], acct.bucketSid).accepted;
    const { bucketSid: _b, endpoint: _e, accountSid: _a, ...line } = old as Record<string, unknown>;
    await ch.command({
      query: `INSERT INTO requests (account_sid, bucket_sid, sid, environment_sid, context_sid, direction,
                                    created_at, received_at, method, host, path, endpoint, status_code, record)
               SELECT {a:String}, {b:String}, {s:String}, 'production', 'older-row', 'in', now64(3), now64(3),
                      'GET', 'api.example.com', '/users/42/orders', '/users/{id}/orders', 200, {r:String}`,
      query_params: { a: acct.accountSid, b: acct.bucketSid, s: line.sid, r: JSON.stringify(line) },
    });
    const served = await servedRecord(line.sid as string);
    expect(served).toMatchObject({
      sid: line.sid,
      accountSid: acct.accountSid,
      bucketSid: acct.bucketSid,
      endpoint: '/users/{id}/orders',
      contextSid: 'older-row',
    });
  });
});
