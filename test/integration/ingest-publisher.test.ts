import { Kafka, logLevel, Partitioners, type Producer } from 'kafkajs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { normalizeRecords } from '../../services/ingest/record.normalizer.js';
import { RecordPublisher } from '../../services/ingest/record.publisher.js';
import {
  listAllRequests,
  makeRecord,
  newAccount,
  testEnv,
  waitFor,
  type TestAccount,
} from '../helpers/client.js';

/**
 * The ingest publisher against the run's Kafka (docs/security.md "Nesting depth"): each record is
 * serialised in the call that publishes it, so one that JSON cannot write fails alone, in its
 * caller, and never in the linger timer (where a throw is an uncaught exception that ends the
 * ingest process for every tenant). The others of the call, and other buckets' calls batched
 * with it, reach Kafka and are stored.
 */
let producer: Producer;

beforeAll(async () => {
  const kafka = new Kafka({
    clientId: 'publisher-test',
    brokers: testEnv().kafkaBrokers,
    logLevel: logLevel.NOTHING,
  });
  producer = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
});

afterAll(async () => {
  await producer?.disconnect();
});

describe('record publisher', () => {
  it('leaves out a record it cannot serialise, alone, and publishes the rest of every call', async () => {
    const [a, b] = await Promise.all([newAccount(), newAccount()]);
    // A long linger: both calls are batched into one send by the timer.
    const publisher = new RecordPublisher(
      producer,
      { lingerMs: 50, timeoutMs: 10_000 },
      pino({ level: 'silent' }),
    );
    const normalized = (acct: TestAccount, contexts: string[]) =>
      normalizeRecords(
        contexts.map((contextSid) => makeRecord({ contextSid })),
        acct.bucketSid,
      ).accepted;
    const mine = normalized(a, ['a-kept-0', 'a-cyclic', 'a-kept-2']);
    // A cycle: JSON.stringify throws on it, as it does on a value nesting past the call stack.
    const cyclic = mine[1]!.request;
    cyclic.self = cyclic;
    const [resultA, resultB] = await Promise.all([
      publisher.publish(a.accountSid, a.bucketSid, mine),
      publisher.publish(b.accountSid, b.bucketSid, normalized(b, ['b-kept'])),
    ]);
    expect([resultA, resultB]).toEqual([{ unserialisable: [1] }, { unserialisable: [] }]);
    // A call of nothing but such records is not sent at all.
    expect(await publisher.publish(a.accountSid, a.bucketSid, [mine[1]])).toEqual({ unserialisable: [0] });
    await publisher.drain();

    const stored = async (acct: TestAccount, n: number) =>
      waitFor(
        async () => {
          const l = await listAllRequests(acct.apiToken, acct.accountSid, acct.bucketSid);
          return l.length >= n ? l.map((r) => r.contextSid).sort() : undefined;
        },
        { timeoutMs: 30_000, what: `${n} records stored` },
      );
    expect(await stored(a, 2)).toEqual(['a-kept-0', 'a-kept-2']);
    expect(await stored(b, 1)).toEqual(['b-kept']);
  }, 60_000);
});
