import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, Partitioners, type Producer } from 'kafkajs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProcessorConsumer } from '../../services/processor/processor.consumer.js';
import { RequestsWriter } from '../../services/processor/requests.writer.js';
import type { RequestRow } from '../../services/processor/row.mapper.js';
import {
  createClickHouse,
  migrateClickHouse,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import { parseConfig } from '../../services/shared/config.js';
import { testEnv, waitFor } from '../helpers/client.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';

/**
 * The block source on the stack's real Kafka (topics and groups of its own) with a chDB of its own:
 * offsets are committed only after the sink stored a block, so a consumer that stops resumes after
 * the last stored block; a block whose sink fails is not committed, and when kafkajs delivers the
 * batch again the source re-forms the saved range and re-sends it with the same token (stored once).
 */

const tag = randomBytes(4).toString('hex');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-block-source-'));
const chCfg = embeddedClickHouse(dir);
const log = pino({ level: 'silent' });
const cfg = parseConfig({ SECRETS_KEY: 'ab'.repeat(32), PROCESSOR_FLUSH_MS: '50', PROCESSOR_HOLD_MS: '250' });

let ch: ClickHouseClient;
let kafka: Kafka;
let producer: Producer;
const running: ProcessorConsumer[] = [];

/** A writer whose first insert fails as an unreachable ClickHouse does (not a data error). */
class FailingOnceWriter extends RequestsWriter {
  failures = 1;
  inserts: string[] = [];
  override async insert(rows: RequestRow[], token: string): Promise<void> {
    this.inserts.push(token);
    if (this.failures-- > 0) throw new Error('connect ECONNREFUSED (injected)');
    await super.insert(rows, token);
  }
}

beforeAll(async () => {
  ch = createClickHouse(chCfg);
  await migrateClickHouse(ch, chCfg, log);
  kafka = new Kafka({
    clientId: 'block-source-test',
    brokers: testEnv().kafkaBrokers,
    logLevel: logLevel.NOTHING,
  });
  producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
}, 180_000);

afterAll(async () => {
  for (const p of running) await p.stop().catch(() => undefined);
  await producer?.disconnect();
  await ch?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function newTopic(name: string, numPartitions = 1): Promise<string> {
  const topic = `test.block-source.${name}.${tag}`;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic, numPartitions, replicationFactor: 1 }],
  });
  await admin.disconnect();
  return topic;
}

function start(
  topic: string,
  writer: RequestsWriter,
  opts: {
    hold?: { ms: number; bytes: number };
    fetchMaxBytes?: number;
    busyHold?: 'on';
    cfg?: ReturnType<typeof parseConfig>;
  } = {},
): ProcessorConsumer {
  const p = new ProcessorConsumer({
    kafka,
    producer,
    writer,
    cfg: opts.cfg ?? cfg,
    log,
    busyHold: opts.busyHold,
    topic,
    groupId: `${topic}.group`,
    hold: opts.hold,
    fetchMaxBytes: opts.fetchMaxBytes,
  });
  running.push(p);
  return p;
}

/** One version 2 message of `n` records of bucket `bucket` (each with a body of `bodyBytes`). */
async function send(topic: string, bucket: string, n: number, from: number, bodyBytes = 0): Promise<void> {
  const head = JSON.stringify({ v: 2, accountSid: `acc_${tag}`, bucketSid: bucket });
  const lines = Array.from({ length: n }, (_, i) =>
    JSON.stringify({
      sid: `req_${bucket.slice(-8)}${String(from + i).padStart(19, '0')}`,
      createdAt: new Date().toISOString(),
      receivedAt: new Date().toISOString(),
      request: {
        method: 'GET',
        path: `/r/${from + i}`,
        ...(bodyBytes ? { body: 'x'.repeat(bodyBytes) } : {}),
      },
    }),
  );
  await producer.send({ topic, acks: -1, messages: [{ key: bucket, value: [head, ...lines].join('\n') }] });
}

async function stored(bucket: string): Promise<number> {
  const rs = await ch.query({
    query: 'SELECT count() AS n FROM requests WHERE bucket_sid = {b:String}',
    query_params: { b: bucket },
    format: 'JSONEachRow',
  });
  const [row] = await rs.json<{ n: string | number }>();
  return Number(row?.n ?? 0);
}

describe('block source on real Kafka', () => {
  it('a consumer that stopped resumes after the last committed block', async () => {
    const topic = await newTopic('resume');
    const bucket = `bkt_resume${tag}`;
    const first = start(topic, new RequestsWriter(ch));
    await first.start();
    await send(topic, bucket, 5, 0);
    await waitFor(async () => (await stored(bucket)) === 5, { timeoutMs: 60_000, what: 'first 5 stored' });
    await first.stop();

    await send(topic, bucket, 3, 5);
    const second = start(topic, new RequestsWriter(ch));
    await second.start();
    await waitFor(async () => (await stored(bucket)) === 8, { timeoutMs: 60_000, what: 'all 8 stored' });
    // The rows are readable a moment before the processor's insert call returns and counts them.
    await waitFor(async () => second.stats.stored >= 3, { timeoutMs: 10_000, what: 'the insert counted' });
    // Only the message after the commit came again.
    expect(second.stats.consumed).toBe(1);
    expect(second.stats.stored).toBe(3);
    expect(second.stats.duplicates).toBe(0);
  });

  it('a backlog fetched in small fetches is stored as one block with one token, and committed', async () => {
    const topic = await newTopic('backlog');
    const bucket = `bkt_backlog${tag}`;
    // Five messages waiting before the consumer starts; each fetch returns one (fetchMaxBytes 1).
    for (let i = 0; i < 5; i++) await send(topic, bucket, 2, i * 2);
    const writer = new FailingOnceWriter(ch);
    writer.failures = 0;
    const p = start(topic, writer, { fetchMaxBytes: 1, hold: { ms: 60_000, bytes: 1 << 30 } });
    await p.start();
    await waitFor(async () => (await stored(bucket)) === 10, { timeoutMs: 60_000, what: 'backlog stored' });
    expect(writer.inserts).toEqual([`${topic}:0:0-4`]);
    await p.stop();
    await send(topic, bucket, 1, 10);
    const next = start(topic, new RequestsWriter(ch));
    await next.start();
    await waitFor(async () => (await stored(bucket)) === 11, { timeoutMs: 60_000, what: 'all 11 stored' });
    // The held messages were committed after their insert: only the new one came again.
    expect(next.stats.consumed).toBe(1);
    expect(next.stats.duplicates).toBe(0);
    expect(await stored(bucket)).toBe(11);

    // The same backlog without the hold: one block per fetch, so the fetches above were five.
    const plainTopic = await newTopic('backlog-plain');
    const plainBucket = `bkt_backlogplain${tag}`;
    for (let i = 0; i < 5; i++) await send(plainTopic, plainBucket, 2, i * 2);
    const plainWriter = new FailingOnceWriter(ch);
    plainWriter.failures = 0;
    const plain = start(plainTopic, plainWriter, { fetchMaxBytes: 1, hold: { ms: 0, bytes: 0 } });
    await plain.start();
    await waitFor(async () => (await stored(plainBucket)) === 10, {
      timeoutMs: 60_000,
      what: 'plain stored',
    });
    expect(plainWriter.inserts).toHaveLength(5);
  });

  it('a hold waiting for arrivals stores its messages within PROCESSOR_FRESHNESS_MS of their receipt', async () => {
    const topic = await newTopic('freshness');
    const bucket = `bkt_fresh${tag}`;
    const freshnessMs = 2000;
    const writer = new FailingOnceWriter(ch);
    writer.failures = 0;
    // Every fetch reaches the partition's end with over 1 MiB (busy, as for processors sharing a
    // group): held, and with a minute's hold only the freshness bound stores it while more arrive.
    const p = start(topic, writer, {
      busyHold: 'on',
      hold: { ms: 60_000, bytes: 1 << 30 },
      cfg: parseConfig({
        SECRETS_KEY: 'ab'.repeat(32),
        PROCESSOR_FLUSH_MS: '50',
        PROCESSOR_FETCH_MIN_BYTES: '1',
        PROCESSOR_FRESHNESS_MS: String(freshnessMs),
      }),
    });
    await p.start();
    // ~1.2 MiB every 300 ms for 6 s.
    const messages = 20;
    const perMessage = 300;
    for (let i = 0; i < messages; i++) {
      await send(topic, bucket, perMessage, i * perMessage, 4000);
      await new Promise((r) => setTimeout(r, 300));
    }
    await waitFor(async () => (await stored(bucket)) === messages * perMessage, {
      timeoutMs: 30_000,
      what: 'every held record stored',
    });
    // Fetches were joined (fewer inserts than messages), yet no record waited past the bound plus
    // its block's own insert.
    expect(writer.inserts.length).toBeLessThan(messages);
    expect(writer.inserts.length).toBeGreaterThan(1);
    const late = async (b: string) => {
      const rs = await ch.query({
        query: `SELECT max(dateDiff('millisecond', received_at, stored_at)) AS ms FROM requests
                WHERE bucket_sid = {b:String}`,
        query_params: { b },
        format: 'JSONEachRow',
      });
      const [row] = await rs.json<{ ms: string | number }>();
      return Number(row?.ms);
    };
    expect(await late(bucket)).toBeLessThanOrEqual(freshnessMs + 1500);

    // A record into the idle pipeline is not held at all: stored within the fetch wait and its insert.
    const idle = `bkt_idle${tag}`;
    await send(topic, idle, 1, 0);
    await waitFor(async () => (await stored(idle)) === 1, { timeoutMs: 30_000, what: 'idle record stored' });
    expect(await late(idle)).toBeLessThanOrEqual(freshnessMs);
    await p.stop();
  });

  it('processors sharing a group hold busy fetches; a processor alone in its group does not', async () => {
    const topic = await newTopic('shared', 2);
    const a = start(topic, new RequestsWriter(ch));
    const b = start(topic, new RequestsWriter(ch));
    expect(a.busyHold).toBe(false);
    await Promise.all([a.start(), b.start()]);
    // Each reads the group's description after its join: two members.
    await waitFor(() => a.busyHold && b.busyHold, { timeoutMs: 60_000, what: 'both see a shared group' });
    // b leaves: a rejoins alone and stops holding for being busy.
    await b.stop();
    await waitFor(() => !a.busyHold, { timeoutMs: 60_000, what: 'a alone in its group' });
    await a.stop();
  });

  it('a failed block is not committed: the restarted consumer replays its range with the same token', async () => {
    const topic = await newTopic('replay');
    const bucket = `bkt_replay${tag}`;
    await send(topic, bucket, 4, 0);
    await send(topic, bucket, 2, 4);
    const writer = new FailingOnceWriter(ch);
    const p = start(topic, writer);
    await p.start();
    // The failed insert fails the batch; kafkajs delivers it again from the committed offset.
    await waitFor(async () => (await stored(bucket)) === 6, { timeoutMs: 60_000, what: 'all 6 stored' });
    expect(writer.inserts.length).toBeGreaterThanOrEqual(2);
    expect(writer.inserts[1]).toBe(writer.inserts[0]);
    expect(writer.inserts[0]).toMatch(new RegExp(`^${topic.replaceAll('.', '\\.')}:0:\\d+-\\d+$`));
    expect(await stored(bucket)).toBe(6);
  });
});
