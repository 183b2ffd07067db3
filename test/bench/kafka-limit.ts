/**
 * Limit (b): raw Kafka produce→consume rate of the benchmark's payloads, kafkajs against the
 * stack's own broker, on a bench topic with the partition count of `traffic.requests`. Messages
 * are what the ingest publisher produces (`{v, accountSid, bucketSid, records}` with the server's
 * fields filled, `batch` records each), pre-serialised; the producer keeps several sends in
 * flight with acks=all, a consumer in the same process (like the service) counts them back.
 * Forked by bench.ts so its memory and CPU are its own.
 */
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
// The service's kafkajs: native CRC-32C, encoder growth without zero-fill (loaded before kafkajs).
import '../../services/shared/kafkajs-tuning.js';
import kafkajs from 'kafkajs';
import { Consumer as PltConsumer, Producer as PltProducer, ProduceAcks } from '@platformatic/kafka';

// NOTE: kafkajs is CommonJS; CompressionCodecs is not visible to ESM named imports.
const { CompressionCodecs, CompressionTypes, Kafka, logLevel } = kafkajs;
import { newSid } from '../../services/shared/ids.js';
import { ingestRecord, rng } from './records.js';

export interface KafkaLimitConfig {
  brokers: string[];
  topic: string;
  partitions: number;
  records: number;
  batch: number;
  /** messages per producer.send */
  messagesPerSend: number;
  /** producer sends in flight */
  inflight: number;
  poolRecords: number;
  environments: string[];
  seed: number;
  /** producer compression; gzip runs on libuv's thread pool (kafkajs' codec is async zlib) */
  compression?: 'none' | 'gzip';
  /** zlib level for gzip (kafkajs' own codec uses the default, 6) */
  gzipLevel?: number;
  /** the client: kafkajs (the service's) or @platformatic/kafka (the maintained pure-JS alternative, compared here) */
  client?: 'kafkajs' | 'platformatic';
}

export interface KafkaLimitResult {
  records: number;
  messages: number;
  bytes: number;
  /** first send → last message consumed, records/s */
  rate: number;
  /** first send → last send acknowledged, records/s */
  produceRate: number;
  seconds: number;
  compression: string;
  client: string;
  /** CPU seconds of this process (producer + consumer + zlib threads) per 100,000 records */
  cpuSecondsPer100k: number;
}

async function run(cfg: KafkaLimitConfig): Promise<KafkaLimitResult> {
  if (cfg.compression === 'gzip' && cfg.gzipLevel !== undefined) {
    const gzip = promisify(zlib.gzip);
    const unzip = promisify(zlib.unzip);
    const level = cfg.gzipLevel;
    CompressionCodecs[CompressionTypes.GZIP] = () => ({
      compress: (encoder: { buffer: Buffer }) => gzip(encoder.buffer, { level }),
      decompress: (buffer: Buffer) => unzip(buffer),
    });
  }
  const kafka = new Kafka({ clientId: 'tapline-bench', brokers: cfg.brokers, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic: cfg.topic, numPartitions: cfg.partitions, replicationFactor: -1 }],
  });
  await admin.disconnect();

  const r = rng(cfg.seed);
  const receivedAt = new Date().toISOString();
  const pool: { key: string; value: Buffer }[] = [];
  for (let i = 0; i < Math.max(1, Math.ceil(cfg.poolRecords / cfg.batch)); i++) {
    const bucketSid = `bkt_benchlimit${i % 4}`;
    const records = Array.from({ length: cfg.batch }, () => {
      const rec = ingestRecord(r, { environments: cfg.environments });
      return {
        ...rec,
        sid: newSid('request'),
        bucketSid,
        receivedAt,
        contextSid: null,
        firewall: { blocked: false },
      };
    });
    pool.push({
      key: bucketSid,
      // Version 2 of the payload, as ingest writes it: a header line, then a line per record.
      value: Buffer.from(
        [
          JSON.stringify({ v: 2, accountSid: 'acc_benchlimit', bucketSid }),
          ...records.map((x) => JSON.stringify(x)),
        ].join('\n'),
      ),
    });
  }
  const messages = Math.ceil(cfg.records / cfg.batch);
  if (cfg.client === 'platformatic') return runPlatformatic(cfg, pool, messages);

  const consumer = kafka.consumer({
    groupId: `${cfg.topic}-reader`,
    maxBytesPerPartition: 16 * 1024 * 1024,
    maxBytes: 64 * 1024 * 1024,
    maxWaitTimeInMs: 100,
  });
  await consumer.connect();
  await consumer.subscribe({ topic: cfg.topic, fromBeginning: true });
  let consumed = 0;
  let lastConsumed = 0;
  let allConsumed: () => void = () => undefined;
  const consumedAll = new Promise<void>((resolve) => (allConsumed = resolve));
  // The consumer must own its partitions before the clock starts.
  const joined = new Promise<void>((resolve) => consumer.on(consumer.events.GROUP_JOIN, () => resolve()));
  await consumer.run({
    partitionsConsumedConcurrently: cfg.partitions,
    eachBatch: async ({ batch }) => {
      consumed += batch.messages.length;
      lastConsumed = performance.now();
      if (consumed >= messages) allConsumed();
    },
  });
  await joined;

  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const compression = cfg.compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None;
  const { bytes, cpu0, t0, produced } = await produceAll(cfg, pool, messages, async (msgs) => {
    await producer.send({ topic: cfg.topic, acks: -1, compression, messages: msgs });
  });
  await timedOut(consumedAll);
  const seconds = (lastConsumed - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await producer.disconnect();
  await consumer.disconnect();
  const cleanup = kafka.admin();
  await cleanup.connect();
  await cleanup.deleteTopics({ topics: [cfg.topic] }).catch(() => undefined);
  await cleanup.disconnect();
  return limitResult(cfg, messages, bytes, seconds, t0, produced, cpu, {
    compression: cfg.compression === 'gzip' ? `gzip level ${cfg.gzipLevel ?? 'default'}` : 'none',
    client: 'kafkajs',
  });
}

/**
 * The same produce→consume with @platformatic/kafka: Buffer values as they are, acks=all, the
 * same sends in flight, a consumer group stream in the same process counting messages.
 */
/**
 * Sends `messages` messages from the pool, `messagesPerSend` per send with `inflight` sends at a
 * time, through `send` (the client under test); the clock and CPU start with the first send.
 */
async function produceAll(
  cfg: KafkaLimitConfig,
  pool: { key: string; value: Buffer }[],
  messages: number,
  send: (msgs: { key: string; value: Buffer }[]) => Promise<void>,
): Promise<{ bytes: number; cpu0: NodeJS.CpuUsage; t0: number; produced: number }> {
  let bytes = 0;
  let next = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const sender = async () => {
    for (;;) {
      const start = next;
      if (start >= messages) return;
      next = Math.min(messages, start + cfg.messagesPerSend);
      const msgs = [];
      for (let i = start; i < next; i++) {
        const m = pool[i % pool.length]!;
        bytes += m.value.length;
        msgs.push(m);
      }
      await send(msgs);
    }
  };
  await Promise.all(Array.from({ length: cfg.inflight }, sender));
  return { bytes, cpu0, t0, produced: performance.now() };
}

function limitResult(
  cfg: KafkaLimitConfig,
  messages: number,
  bytes: number,
  seconds: number,
  t0: number,
  produced: number,
  cpu: NodeJS.CpuUsage,
  about: { compression: string; client: string },
): KafkaLimitResult {
  const records = messages * cfg.batch;
  return {
    records,
    messages,
    bytes,
    rate: records / seconds,
    produceRate: records / ((produced - t0) / 1000),
    seconds,
    ...about,
    cpuSecondsPer100k: ((cpu.user + cpu.system) / 1e6 / records) * 1e5,
  };
}

function timedOut(consumedAll: Promise<void>): Promise<unknown> {
  return Promise.race([
    consumedAll,
    new Promise((_, reject) => setTimeout(() => reject(new Error('consume timed out')), 300_000)),
  ]);
}

async function runPlatformatic(
  cfg: KafkaLimitConfig,
  pool: { key: string; value: Buffer }[],
  messages: number,
): Promise<KafkaLimitResult> {
  // NOTE: @platformatic/kafka targets Node 22+ (Promise.withResolvers); the service runs on Node
  // 20.19+, so the comparison polyfills it here. Its need for Node 22 is itself a cost of switching.
  if (typeof (Promise as { withResolvers?: unknown }).withResolvers !== 'function') {
    Object.defineProperty(Promise, 'withResolvers', {
      configurable: true,
      value: function withResolvers<T>() {
        let resolve!: (v: T) => void;
        let reject!: (e: unknown) => void;
        const promise = new Promise<T>((a, b) => {
          resolve = a;
          reject = b;
        });
        return { promise, resolve, reject };
      },
    });
  }
  const consumer = new PltConsumer({
    groupId: `${cfg.topic}-plt-reader`,
    clientId: 'tapline-bench-plt',
    bootstrapBrokers: cfg.brokers,
  });
  const stream = await consumer.consume({
    topics: [cfg.topic],
    mode: 'earliest',
    autocommit: false,
    maxBytes: 64 * 1024 * 1024,
    maxBytesPerPartition: 16 * 1024 * 1024,
    maxWaitTime: 100,
  });
  let consumed = 0;
  let lastConsumed = 0;
  let allConsumed: () => void = () => undefined;
  const consumedAll = new Promise<void>((resolve) => (allConsumed = resolve));
  stream.on('data', () => {
    consumed++;
    lastConsumed = performance.now();
    if (consumed >= messages) allConsumed();
  });
  const producer = new PltProducer({ clientId: 'tapline-bench-plt', bootstrapBrokers: cfg.brokers });
  const { bytes, cpu0, t0, produced } = await produceAll(cfg, pool, messages, async (msgs) => {
    await producer.send({
      messages: msgs.map((m) => ({ topic: cfg.topic, key: Buffer.from(m.key), value: m.value })),
      acks: ProduceAcks.ALL,
    });
  });
  await timedOut(consumedAll);
  const seconds = (lastConsumed - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await stream.close();
  await consumer.close();
  await producer.close();
  return limitResult(cfg, messages, bytes, seconds, t0, produced, cpu, {
    compression: 'none',
    client: '@platformatic/kafka',
  });
}

process.on('message', (cfg: KafkaLimitConfig) => {
  void run(cfg).then(
    (result) => process.send!({ type: 'done', result }, () => process.exit(0)),
    (err: Error) =>
      process.send!({ type: 'error', message: err.stack ?? err.message }, () => process.exit(1)),
  );
});
