import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, Partitioners, type Consumer, type KafkaMessage, type Producer } from 'kafkajs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActionJob } from '../../schemas/action-job.schema.js';
import type { Block } from '../../services/processor/block-source.js';
import { Decoder } from '../../services/processor/decoder.js';
import { ExcludedWriter } from '../../services/processor/excluded.writer.js';
import { exclude, ok, type PipelineResult, type StoredRecord } from '../../services/processor/pipeline.js';
import { RequestsSink, SinkBlock } from '../../services/processor/requests.sink.js';
import { RequestsWriter } from '../../services/processor/requests.writer.js';
import type { RequestRow } from '../../services/processor/row.mapper.js';
import {
  createClickHouse,
  migrateClickHouse,
  type ClickHouseClient,
} from '../../services/shared/clickhouse.js';
import { recentDay, testEnv, waitFor } from '../helpers/client.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';

/**
 * The sink's writes against a chDB of its own and topics of its own in the stack's Kafka: rows
 * (deduplicated on the block's token), excluded counts, dead letters with their headers, action
 * jobs, the sid window. ClickHouse refusing a row is injected (RowBinary leaves chDB nothing to
 * refuse in practice); the isolation around it is RequestsWriter.insertIsolating on real chDB.
 */

const tag = randomBytes(4).toString('hex');
const dlqTopic = `test.sink.dlq.${tag}`;
const actionsTopic = `test.sink.actions.${tag}`;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-sink-'));
const chCfg = embeddedClickHouse(dir);
const log = pino({ level: 'silent' });
const POISON = 'req_POISONPOISONPOISONPOISON1';

/** A writer whose ClickHouse refuses any block holding the poison row, as it refuses bad data. */
class RefusingWriter extends RequestsWriter {
  override async insert(rows: RequestRow[], token: string): Promise<void> {
    if (rows.some((r) => r.sid === POISON)) throw new Error('Cannot parse input: injected refusal');
    await super.insert(rows, token);
  }
}

let ch: ClickHouseClient;
let kafka: Kafka;
let producer: Producer;
let tap: Consumer;
const tapped: { topic: string; m: KafkaMessage }[] = [];
let sink: RequestsSink;
const newSink = () =>
  new RequestsSink({
    producer,
    writer: new RefusingWriter(ch),
    excludedWriter: new ExcludedWriter(ch),
    log,
    dlqTopic,
    actionsTopic,
  });

beforeAll(async () => {
  ch = createClickHouse(chCfg);
  await migrateClickHouse(ch, chCfg, log);
  kafka = new Kafka({ clientId: 'sink-test', brokers: testEnv().kafkaBrokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: [dlqTopic, actionsTopic].map((t) => ({ topic: t, numPartitions: 1, replicationFactor: 1 })),
  });
  await admin.disconnect();
  producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  tap = kafka.consumer({ groupId: `sink-tap-${tag}` });
  await tap.connect();
  await tap.subscribe({ topics: [dlqTopic, actionsTopic], fromBeginning: true });
  await tap.run({ eachMessage: async ({ topic, message }) => void tapped.push({ topic, m: message }) });
  sink = newSink();
}, 180_000);

afterAll(async () => {
  await tap?.disconnect();
  await producer?.disconnect();
  await ch?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Inside the retention on any date: the requests table's TTL would drop older rows. */
const DAY = recentDay();
const sidOf = (n: number) => `req_${tag}${String(n).padStart(23, '0')}`;
const line = (sid: string) =>
  JSON.stringify({
    sid,
    createdAt: `${DAY}T10:00:00.000Z`,
    receivedAt: `${DAY}T10:00:00.100Z`,
    bucketSid: `bkt_${tag}`,
    request: { method: 'GET', path: `/p/${sid}` },
    response: { statusCode: 200 },
  });

/** One message of the given record sids decoded into a sink block, each through `result`. */
function fill(
  out: SinkBlock,
  offset: string,
  sids: string[],
  result: (record: StoredRecord) => PipelineResult = ok,
  into = sink,
): void {
  const msg = new Decoder().decode(
    Buffer.from(
      [JSON.stringify({ v: 2, accountSid: `acc_${tag}`, bucketSid: `bkt_${tag}` }), ...sids.map(line)].join(
        '\n',
      ),
    ),
    out.block.partition,
    offset,
  );
  for (const d of msg.records)
    if (!into.isRepeat(out, d.record.bucketSid, d.record.sid))
      into.add(out, offset, d, result(d.record), false);
}

async function count(query: string): Promise<number> {
  const rs = await ch.query({ query, format: 'JSONEachRow' });
  const [row] = await rs.json<{ n: string | number }>();
  return Number(row?.n ?? 0);
}

const block = (min: number, max: number): Block => ({
  topic: `test.sink.${tag}`,
  partition: 0,
  range: { min, max },
  messages: [],
  replay: false,
});

describe('RequestsSink.write', () => {
  it('stores the rows once per token, isolates a refused row into the DLQ, counts exclusions, sends jobs', async () => {
    const job = {
      executionSid: `wfx_${tag}`,
      workflowSid: `wfl_${tag}`,
      trigger: { type: 'request' },
    } as unknown as ActionJob;
    const build = (into: RequestsSink) => {
      const out = new SinkBlock(block(0, 2));
      fill(out, '0', [sidOf(1), sidOf(2), POISON], ok, into);
      fill(out, '1', [sidOf(3)], () => exclude(`exc_${tag}`), into);
      fill(out, '2', [sidOf(4)], (r) => ok(r, { jobs: [job] }), into);
      return out;
    };
    await sink.write(build(sink));
    expect(sink.stats).toMatchObject({ stored: 3, deadLettered: 1, jobs: 1, excluded: 1, duplicates: 0 });
    // The same block again from a new sink (a replay after a crash, with no sid window yet):
    // ClickHouse drops the repeated inserts; dead letters and jobs go out again.
    const restarted = newSink();
    await restarted.write(build(restarted));

    const mine = `bucket_sid = 'bkt_${tag}'`;
    expect(await count(`SELECT count() AS n FROM requests WHERE ${mine}`)).toBe(3);
    expect(await count(`SELECT sum(excluded) AS n FROM excluded_minute WHERE ${mine}`)).toBe(1);
    const text = await ch.query({
      query: `SELECT record FROM requests WHERE sid = '${sidOf(1)}'`,
      format: 'JSONEachRow',
    });
    const [row] = await text.json<{ record: string }>();
    expect(JSON.parse(row!.record)).toMatchObject({
      sid: sidOf(1),
      accountSid: `acc_${tag}`,
      bucketSid: `bkt_${tag}`,
    });

    const dead = await waitFor(() => {
      const d = tapped.filter((t) => t.topic === dlqTopic);
      return d.length >= 2 ? d : undefined;
    });
    for (const { m } of dead) {
      expect(m.headers?.reason?.toString()).toBe(
        'ClickHouse refused the row: Cannot parse input: injected refusal',
      );
      expect(m.headers?.offset?.toString()).toBe('0');
      expect(m.headers?.partition?.toString()).toBe('0');
      expect(JSON.parse(m.value!.toString()).sid).toBe(POISON);
    }
    const jobs = await waitFor(() => {
      const j = tapped.filter((t) => t.topic === actionsTopic);
      return j.length >= 2 ? j : undefined;
    });
    expect(jobs[0]!.m.key?.toString()).toBe(`wfl_${tag}`);
    expect(jobs[0]!.m.headers?.executionSid?.toString()).toBe(`wfx_${tag}`);
    expect(restarted.stats).toMatchObject({
      stored: 3,
      deadLettered: 1,
      jobs: 1,
      excluded: 1,
      duplicates: 0,
    });
  });

  it('a sid stored by an earlier block of the partition is a repeat; other partitions are not affected', async () => {
    const first = new SinkBlock(block(10, 10));
    fill(first, '10', [sidOf(20)]);
    await sink.write(first);
    const again = new SinkBlock(block(11, 11));
    expect(sink.isRepeat(again, `bkt_${tag}`, sidOf(20))).toBe(true);
    expect(sink.isRepeat(new SinkBlock({ ...block(11, 11), partition: 1 }), `bkt_${tag}`, sidOf(20))).toBe(
      false,
    );
    // The same sid in another bucket (another tenant's record) is a record of its own.
    expect(sink.isRepeat(again, `bkt_other${tag}`, sidOf(20))).toBe(false);
  });
});
