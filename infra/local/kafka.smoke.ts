// Manual check of the Kafka launcher: `npx tsx infra/local/kafka.smoke.ts`.
// Set KAFKA_SMOKE_CACHE_DIR to measure a cold Maven fetch into an empty folder (default: <repo>/.cache).
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel, Partitioners } from 'kafkajs';
import { pino } from 'pino';
import { ensureTopics } from '../../services/shared/kafka.js';
import { ensureKafkaLibs } from './kafka-maven.js';
import { startKafka, type KafkaHandle } from './kafka.launcher.js';

const MESSAGES = 1000;
const TOPIC = 'smoke.events';

/** The smoke topic, through the same topic creator as the service's roles. */
const createTopic = (brokers: string[]) =>
  ensureTopics(new Kafka({ clientId: 'tapline-admin', brokers, logLevel: logLevel.NOTHING }), [
    { topic: TOPIC, numPartitions: 4 },
  ]);

// Launcher timings arrive as log fields; keep them, print warnings, drop the broker's debug chatter.
const logged: { msg?: string; ms?: number; level: number }[] = [];
const log = pino(
  { level: 'debug' },
  {
    write(line: string) {
      const entry = JSON.parse(line) as { msg?: string; ms?: number; level: number };
      logged.push(entry);
      if (entry.level >= 30) process.stdout.write(line);
    },
  },
);
const loggedMs = (msg: string): number | undefined => logged.findLast((entry) => entry.msg === msg)?.ms;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject()));
    });
  });
}

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const value = await fn();
  return [value, Math.round(performance.now() - started)];
}

async function produceAndConsume(
  brokers: string[],
  group: string,
  produce: boolean,
): Promise<Record<string, number>> {
  const kafka = new Kafka({ clientId: 'tapline-smoke', brokers, logLevel: logLevel.WARN });
  const timings: Record<string, number> = {};
  if (produce) {
    const producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    [, timings.produceMs] = await timed(async () => {
      for (let batch = 0; batch < MESSAGES; batch += 100) {
        const messages = Array.from({ length: 100 }, (_, i) => ({
          key: `k${(batch + i) % 17}`,
          value: JSON.stringify({ n: batch + i }),
        }));
        await producer.send({ topic: TOPIC, messages });
      }
    });
    await producer.disconnect();
  }

  const consumer = kafka.consumer({ groupId: group });
  const seen = new Set<number>();
  [, timings.consumeMs] = await timed(async () => {
    await consumer.connect();
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`only ${seen.size}/${MESSAGES} consumed after 60 s`)),
        60_000,
      );
      void consumer.run({
        eachMessage: async ({ message }) => {
          seen.add((JSON.parse(String(message.value)) as { n: number }).n);
          if (seen.size === MESSAGES) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
  });
  await consumer.disconnect();
  return timings;
}

async function main(): Promise<void> {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  const cacheDir = path.resolve(process.env.KAFKA_SMOKE_CACHE_DIR ?? path.join(root, '.cache'));
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tapline-kafka-smoke-'));
  const [port, controllerPort] = [await freePort(), await freePort()];
  const results: Record<string, number | string> = { cacheDir, dataDir };
  let handle: KafkaHandle | undefined;
  try {
    const [jars, libMs] = await timed(() => ensureKafkaLibs(cacheDir, log));
    results.libFetchMs = libMs;
    results.libJars = jars.length;
    const sizes = await Promise.all(jars.map((jar) => stat(jar).then((s) => s.size)));
    results.libMiB = Math.round((sizes.reduce((a, b) => a + b, 0) / 1024 / 1024) * 10) / 10;
    const cdsDir = path.join(cacheDir, 'kafka', 'cds');
    results.cdsArchiveBefore = (await readdir(cdsDir).catch(() => [])).some((f) => f.endsWith('.jsa'))
      ? 'yes'
      : 'no';

    [handle, results.coldStartMs] = await timed(() =>
      startKafka({ cacheDir, dataDir, port, controllerPort, log }),
    );
    results.formatMs = loggedMs('Kafka storage formatted') ?? 'n/a';
    results.coldBrokerReadyMs = loggedMs('Kafka broker ready') ?? 'n/a';

    [, results.createTopicMs] = await timed(() => createTopic(handle!.brokers));
    Object.assign(results, await produceAndConsume(handle.brokers, 'smoke-1', true));
    [, results.stopMs] = await timed(() => handle!.stop());
    results.exitCode = String(await handle.exited);

    [handle, results.warmStartMs] = await timed(() =>
      startKafka({ cacheDir, dataDir, port, controllerPort, log }),
    );
    results.warmBrokerReadyMs = loggedMs('Kafka broker ready') ?? 'n/a';
    await createTopic(handle.brokers);
    const again = await produceAndConsume(handle.brokers, 'smoke-2', false);
    results.consumeAfterRestartMs = again.consumeMs ?? 'n/a';
    [, results.warmStopMs] = await timed(() => handle!.stop());
    handle = undefined;
  } finally {
    await handle?.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
  console.table(results);
}

await main();
