import { randomBytes } from 'node:crypto';
import { Kafka, logLevel, Partitioners, type Producer, type ProducerRecord } from 'kafkajs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ActionsConsumer } from '../../services/actions/actions.consumer.js';
import { parseConfig } from '../../services/shared/config.js';
import { testEnv, testPool, waitFor } from '../helpers/client.js';

/**
 * The action runner's consumer crashes for good on a non-retriable error (kafkajs does not
 * restart it then): the runner starts a new consumer after a pause, which consumes again from the
 * committed offsets. A runner of its own on topics of its own (real Kafka, real Postgres), so the
 * service's runner and the other tests' jobs are never involved.
 */

const tag = randomBytes(4).toString('hex');
const topic = `test.actions.restart.${tag}`;
const dlqTopic = `test.actions.restart.dlq.${tag}`;

let kafka: Kafka;
let producer: Producer;
let runner: ActionsConsumer | undefined;

beforeAll(async () => {
  kafka = new Kafka({
    clientId: 'actions-restart-test',
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
});

afterAll(async () => {
  await runner?.stop();
  await producer?.disconnect();
});

describe('action runner consumer', () => {
  it('consumes again after a crash on a non-retriable error', async () => {
    // The runner's producer: its first send (the dead letter of the first message) fails with an
    // error kafkajs does not retry, which crashes the consumer; later sends go through.
    const sent: string[] = [];
    let failures = 1;
    const faulty = {
      send: async (record: ProducerRecord) => {
        if (failures > 0) {
          failures--;
          throw Object.assign(new Error('injected: broker refused the write'), { retriable: false });
        }
        const out = await producer.send(record);
        for (const m of record.messages) sent.push(String(m.value));
        return out;
      },
    } as unknown as Producer;
    const cfg = parseConfig({ ACTION_BACKOFF_MS: '100', SECRETS_KEY: 'ab'.repeat(32) });
    runner = new ActionsConsumer({
      kafka,
      producer: faulty,
      pg: testPool(),
      cfg,
      log: pino({ level: 'silent' }),
      topic,
      groupId: `actions-restart-${tag}`,
      dlqTopic,
      restartAfterMs: 500,
    });
    await runner.start();

    await producer.send({ topic, messages: [{ value: 'not json #1' }] });
    await waitFor(async () => failures === 0, { timeoutMs: 30_000, what: 'the injected failure' });
    // After the crash: a second message, and the first one again (its offset was never committed).
    await producer.send({ topic, messages: [{ value: 'not json #2' }] });
    await waitFor(
      async () => sent.some((v) => v.includes('not json #1')) && sent.some((v) => v.includes('not json #2')),
      { timeoutMs: 45_000, what: 'both messages dead-lettered by a restarted consumer' },
    );
    expect(runner.starts).toBeGreaterThanOrEqual(2);
    expect(runner.stats.deadLettered).toBeGreaterThanOrEqual(2);
  });
});
