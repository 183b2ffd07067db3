// Must load before kafkajs: installs the native CRC-32C in its place and grows its buffers without zero-filling (see kafkajs-tuning.ts).
import './kafkajs-tuning.js';
import { Kafka, logLevel, Partitioners, type LogEntry } from 'kafkajs';
import type { Logger } from './logger.js';

/**
 * One kafkajs client per process. kafkajs logs are routed into pino so they get the same
 * structure (and redaction) as everything else.
 */
export function createKafka(brokers: string[], clientId: string, log: Logger): Kafka {
  const kafkaLog = log.child({ module: 'kafkajs' });
  return new Kafka({
    clientId,
    brokers,
    connectionTimeout: 3000,
    requestTimeout: 10000,
    // Small retry budget: an outage must surface as a 503 quickly, not hold HTTP requests open.
    retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1000 },
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ level, log: entry }: LogEntry) => {
        const { message, ...rest } = entry;
        const data = { ...rest, timestamp: undefined, logger: undefined };
        // Errors kafkajs retries by itself while a fresh consumer group forms (every clean start
        // of a single-node broker) are not failures: they go to debug. A retry that gives up
        // surfaces as a crash or a rejected call, which is logged at ERROR where it happens.
        if (level <= logLevel.ERROR && TRANSIENT.test(`${String(message)} ${String(rest.error ?? '')}`))
          kafkaLog.debug(data, message);
        else if (level <= logLevel.ERROR) kafkaLog.error(data, message);
        else if (level === logLevel.WARN) kafkaLog.warn(data, message);
        else kafkaLog.debug(data, message);
      },
  });
}

/**
 * kafkajs messages of conditions it retries itself (coordinator not yet elected or moved, a member
 * joining or leaving the group: every scale-out and failover rebalances it).
 */
const TRANSIENT =
  /group coordinator is not available|not coordinator for group|coordinator load in progress|leadership election|There is no leader for this topic-partition|The group is rebalancing, so a rejoin is needed/i;

export { Partitioners };

/**
 * Creates the topics that do not exist yet and waits until each partition has a leader; every role
 * calls it at start (so the order of starts does not matter), as does the local broker's smoke
 * check. Idempotent, also when several processes create the same topics at once.
 */
export async function ensureTopics(
  kafka: Kafka,
  topics: { topic: string; numPartitions: number }[],
  log?: Logger,
): Promise<void> {
  const wanted = [...new Map(topics.map((t) => [t.topic, t])).values()];
  if (wanted.length === 0) return;
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = wanted.filter((t) => !existing.has(t.topic));
    if (missing.length) {
      // Replication factor left to the cluster's default.replication.factor: 1 locally, more when scaled.
      await admin.createTopics({
        waitForLeaders: true,
        topics: missing.map((t) => ({
          topic: t.topic,
          numPartitions: t.numPartitions,
          replicationFactor: -1,
        })),
      });
      log?.info({ topics: missing.map((t) => t.topic) }, 'kafka topics created');
    }
    // createTopics returns early when another process created some of them concurrently: check ourselves.
    const names = wanted.map((t) => t.topic);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const ready = await admin.fetchTopicMetadata({ topics: names }).then(
        ({ topics: meta }) =>
          meta.length === names.length &&
          meta.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0)),
        () => false,
      );
      if (ready) return;
      if (Date.now() > deadline) throw new Error(`kafka: topics not ready after 30 s: ${names.join(', ')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await admin.disconnect();
  }
}
