import { Kafka, logLevel, type KafkaMessage } from 'kafkajs';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import {
  BlockSource,
  BUSY_HOLD_MAX_MEMBERS,
  type BatchControl,
  type Block,
  type RangeStore,
} from '../../services/processor/block-source.js';
import { planBlocks } from '../../services/processor/block-plan.js';
import type { OffsetRange } from '../../services/processor/requests.writer.js';

// The block source's decisions (which blocks, replay, skip, save, commit) against fakes of its own
// interfaces (RangeStore, BatchControl); the Kafka consumer itself runs in
// test/integration/processor-added-step.test.ts and the fault suite.

const msgs = (from: number, to: number): KafkaMessage[] =>
  Array.from(
    { length: to - from + 1 },
    (_, i) => ({ offset: String(from + i), value: Buffer.from(`m${from + i}`) }) as KafkaMessage,
  );

const shape = (blocks: Block[]) =>
  blocks.map((b) => ({ range: b.range, n: b.messages.length, replay: b.replay, skip: b.skip ?? false }));

const never = async () => {
  throw new Error('rangeStored must not be asked');
};

describe('planBlocks', () => {
  it('without a saved range: blocks of at most maxBlock messages, in order', async () => {
    expect(shape(await planBlocks('t', 0, msgs(10, 24), undefined, 6, never))).toEqual([
      { range: { min: 10, max: 15 }, n: 6, replay: false, skip: false },
      { range: { min: 16, max: 21 }, n: 6, replay: false, skip: false },
      { range: { min: 22, max: 24 }, n: 3, replay: false, skip: false },
    ]);
  });

  it('a saved range the fetch covers exactly is re-sent as it was (replay), the rest as new blocks', async () => {
    const blocks = await planBlocks('t', 2, msgs(10, 24), { min: 10, max: 17 }, 100, never);
    expect(shape(blocks)).toEqual([
      { range: { min: 10, max: 17 }, n: 8, replay: true, skip: false },
      { range: { min: 18, max: 24 }, n: 7, replay: false, skip: false },
    ]);
    expect(blocks[0]!.partition).toBe(2);
    expect(blocks[0]!.topic).toBe('t');
  });

  it('a saved range the fetch covers in part: skipped when stored, processed as new when not', async () => {
    const asked: OffsetRange[] = [];
    const stored = async (r: OffsetRange) => (asked.push(r), true);
    expect(shape(await planBlocks('t', 0, msgs(12, 20), { min: 10, max: 15 }, 100, stored))).toEqual([
      { range: { min: 12, max: 15 }, n: 0, replay: true, skip: true },
      { range: { min: 16, max: 20 }, n: 5, replay: false, skip: false },
    ]);
    expect(asked).toEqual([{ min: 10, max: 15 }]);
    // Stored and nothing after it in this fetch: still a skip block, so the commit moves past it.
    expect(shape(await planBlocks('t', 0, msgs(12, 15), { min: 10, max: 15 }, 100, stored))).toEqual([
      { range: { min: 12, max: 15 }, n: 0, replay: true, skip: true },
    ]);
    const notStored = async () => false;
    expect(shape(await planBlocks('t', 0, msgs(12, 20), { min: 10, max: 15 }, 100, notStored))).toEqual([
      { range: { min: 12, max: 20 }, n: 9, replay: false, skip: false },
    ]);
  });

  it('a saved range outside the fetch plays no part', async () => {
    expect(shape(await planBlocks('t', 0, msgs(30, 31), { min: 10, max: 15 }, 100, never))).toEqual([
      { range: { min: 30, max: 31 }, n: 2, replay: false, skip: false },
    ]);
  });
});

/** A RangeStore in memory that records what the source asked of it. */
class MemoryRanges implements RangeStore {
  saved: string[] = [];
  stored = false;
  async loadRanges() {
    return new Map<number, OffsetRange>();
  }
  async saveRange(topic: string, partition: number, r: OffsetRange) {
    this.saved.push(`${topic}/${partition}:${r.min}-${r.max}`);
  }
  async rangeStored() {
    return this.stored;
  }
}

function control(log: string[], opts: { runningFor?: number; highWatermark?: number } = {}): BatchControl {
  let checks = 0;
  return {
    highWatermark: opts.highWatermark === undefined ? undefined : String(opts.highWatermark),
    resolveOffset: (o) => void log.push(`resolve ${o}`),
    commit: async (o) => void log.push(`commit ${o}`),
    heartbeat: async () => undefined,
    isRunning: () => opts.runningFor === undefined || checks++ < opts.runningFor,
    isStale: () => false,
  };
}

function source(
  ranges: RangeStore,
  sink: (b: Block) => Promise<void>,
  maxBatch = 4,
  // Every batch is stored at once here; the hold of a partition behind its end has tests below.
  hold: {
    holdMs: number;
    holdBytes: number;
    fetchMinBytes?: number;
    busyHold?: 'auto' | 'on' | 'off';
    freshnessMs?: number;
    overlap?: boolean;
  } = { holdMs: 0, holdBytes: 0 },
) {
  return new BlockSource({
    // Never connected: onBatch is driven directly.
    kafka: new Kafka({ clientId: 'block-source-test', brokers: ['127.0.0.1:1'], logLevel: logLevel.NOTHING }),
    topic: 't',
    groupId: 'g',
    maxBatch,
    flushMs: 100,
    fetchMinBytes: 1,
    ...hold,
    ranges,
    log: pino({ level: 'silent' }),
    sink,
  });
}

/** A source (blocks of up to 100, `hold` as given) whose sink records each block and fails until `ok()`. */
function failingUntilOk(ranges: MemoryRanges, hold?: Parameters<typeof source>[3]) {
  const seen: Block[] = [];
  let fail = true;
  const s = source(
    ranges,
    async (b) => {
      seen.push(b);
      if (fail) throw new Error('insert failed');
    },
    100,
    hold,
  );
  return { s, seen, ok: () => void (fail = false) };
}

describe('BlockSource.onBatch', () => {
  it('per block: save the range, hand it to the sink, then resolve and commit past it', async () => {
    const ranges = new MemoryRanges();
    const log: string[] = [];
    const s = source(
      ranges,
      async (b) => void log.push(`sink ${b.range.min}-${b.range.max} saved=${ranges.saved.length}`),
    );
    await s.onBatch('t', 1, msgs(0, 5), control(log));
    expect(ranges.saved).toEqual(['t/1:0-3', 't/1:4-5']);
    expect(log).toEqual([
      'sink 0-3 saved=1',
      'resolve 3',
      'commit 4',
      'sink 4-5 saved=2',
      'resolve 5',
      'commit 6',
    ]);
  });

  it('a sink that fails commits nothing; the batch delivered again replays the saved range with it', async () => {
    const ranges = new MemoryRanges();
    const log: string[] = [];
    const { s, seen, ok } = failingUntilOk(ranges);
    await expect(s.onBatch('t', 0, msgs(7, 9), control(log))).rejects.toThrow('insert failed');
    expect(log).toEqual([]);
    ok();
    await s.onBatch('t', 0, msgs(7, 12), control(log));
    expect(shape(seen)).toEqual([
      { range: { min: 7, max: 9 }, n: 3, replay: false, skip: false },
      { range: { min: 7, max: 9 }, n: 3, replay: true, skip: false },
      { range: { min: 10, max: 12 }, n: 3, replay: false, skip: false },
    ]);
    // The replayed range is saved once (before its first attempt), the new one once.
    expect(ranges.saved).toEqual(['t/0:7-9', 't/0:10-12']);
    expect(log).toEqual(['resolve 9', 'commit 10', 'resolve 12', 'commit 13']);
  });

  it('a range already stored is skipped: no sink, committed past it', async () => {
    const ranges = new MemoryRanges();
    const seen: Block[] = [];
    const log: string[] = [];
    const s = source(ranges, async (b) => void seen.push(b), 100);
    // A first attempt saves 0-9, then the batch comes back from offset 4 (a fetch that starts inside it).
    await expect(
      s.onBatch('t', 0, msgs(0, 9), {
        ...control(log),
        commit: async () => Promise.reject(new Error('broker gone')),
      }),
    ).rejects.toThrow('broker gone');
    ranges.stored = true;
    seen.length = 0;
    log.length = 0;
    await s.onBatch('t', 0, msgs(4, 11), control(log));
    expect(shape(seen)).toEqual([{ range: { min: 10, max: 11 }, n: 2, replay: false, skip: false }]);
    expect(log).toEqual(['resolve 9', 'commit 10', 'resolve 11', 'commit 12']);
  });

  it('stops between blocks when the consumer stops running; an empty batch does nothing', async () => {
    const ranges = new MemoryRanges();
    const seen: Block[] = [];
    const log: string[] = [];
    const s = source(ranges, async (b) => void seen.push(b), 2);
    await s.onBatch('t', 0, [], control(log));
    expect(seen).toEqual([]);
    // Running for the batch check and the first block only.
    await s.onBatch('t', 0, msgs(0, 5), control(log, { runningFor: 2 }));
    expect(shape(seen)).toEqual([{ range: { min: 0, max: 1 }, n: 2, replay: false, skip: false }]);
    expect(log).toEqual(['resolve 1', 'commit 2']);
  });
});

describe('BlockSource.onBatch with overlap (each fetch stored behind the next)', () => {
  const overlap = { holdMs: 0, holdBytes: 0, overlap: true };

  it('a fetch is resolved at once and committed only once stored; the next fetch waits for that store', async () => {
    const ranges = new MemoryRanges();
    const log: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const s = source(
      ranges,
      async (b) => {
        log.push(`sink ${b.range.min}-${b.range.max}`);
        if (b.range.min === 0) await gate;
        log.push(`stored ${b.range.min}-${b.range.max}`);
      },
      100,
      overlap,
    );
    // kafkajs gets the batch back before its store: it asks the broker for the next fetch now.
    await s.onBatch('t', 0, msgs(0, 3), control(log));
    expect(log).toEqual(['resolve 3']);
    let second = false;
    const next = s.onBatch('t', 0, msgs(4, 5), control(log)).then(() => (second = true));
    await new Promise((r) => setTimeout(r, 50));
    // The first block is in its store, uncommitted; the next batch waits behind it.
    expect(log).toEqual(['resolve 3', 'sink 0-3']);
    expect(second).toBe(false);
    release();
    await next;
    await s.settled();
    expect(log).toEqual([
      'resolve 3',
      'sink 0-3',
      'stored 0-3',
      'commit 4',
      'resolve 5',
      'sink 4-5',
      'stored 4-5',
      'commit 6',
    ]);
    expect(ranges.saved).toEqual(['t/0:0-3', 't/0:4-5']);
  });

  it('a failed store commits nothing; the next fetch stores its messages again before fetching on, the saved range replayed', async () => {
    const ranges = new MemoryRanges();
    const log: string[] = [];
    const { s, seen, ok } = failingUntilOk(ranges, overlap);
    // The failure is the store's, behind the fetch: kafkajs is not told and fetches on.
    await s.onBatch('t', 0, msgs(7, 9), control(log));
    await s.settled();
    expect(log).toEqual(['resolve 9']);
    ok();
    await s.onBatch('t', 0, msgs(10, 12), control(log));
    await s.settled();
    expect(shape(seen)).toEqual([
      { range: { min: 7, max: 9 }, n: 3, replay: false, skip: false },
      { range: { min: 7, max: 9 }, n: 3, replay: true, skip: false },
      { range: { min: 10, max: 12 }, n: 3, replay: false, skip: false },
    ]);
    expect(ranges.saved).toEqual(['t/0:7-9', 't/0:10-12']);
    // Joined by a fetch, the saved range is replayed before kafkajs fetches on (as without
    // overlap): a failure there is kafkajs's to deliver again.
    expect(log).toEqual(['resolve 9', 'resolve 9', 'commit 10', 'resolve 12', 'commit 13']);
    await s.stop();
  });

  it('a failed store is tried again alone when no fetch comes', async () => {
    const ranges = new MemoryRanges();
    const log: string[] = [];
    const { s, seen, ok } = failingUntilOk(ranges, overlap);
    await s.onBatch('t', 0, msgs(0, 2), control(log));
    await s.settled();
    ok();
    await vi.waitFor(() => expect(log).toEqual(['resolve 2', 'commit 3']), { timeout: 3000 });
    expect(shape(seen)).toEqual([
      { range: { min: 0, max: 2 }, n: 3, replay: false, skip: false },
      { range: { min: 0, max: 2 }, n: 3, replay: true, skip: false },
    ]);
  });

  it('stopping drops what is not stored yet, uncommitted (fetched again at the next start)', async () => {
    const ranges = new MemoryRanges();
    const log: string[] = [];
    const { s, seen } = failingUntilOk(ranges, overlap);
    await s.onBatch('t', 0, msgs(0, 2), control(log));
    await s.settled();
    expect(seen.length).toBe(1);
    await s.stop();
    await new Promise((r) => setTimeout(r, 1200));
    // The failed attempt is not tried again after the stop, and nothing was committed.
    expect(seen.length).toBe(1);
    expect(log).toEqual(['resolve 2']);
    // A fetch stopped before its store began is not stored at all.
    const other = failingUntilOk(new MemoryRanges(), overlap);
    other.ok();
    const log2: string[] = [];
    await other.s.onBatch('t', 0, msgs(0, 2), control(log2));
    await other.s.stop();
    expect(other.seen).toEqual([]);
    expect(log2).toEqual(['resolve 2']);
  });
});

describe('BlockSource.onBatch behind the partition end (fetches held and joined)', () => {
  const behind = { holdMs: 60_000, holdBytes: 1000 };
  const at = (log: string[], highWatermark: number) => control(log, { highWatermark });

  it('fetches that end before the partition end are held (resolved, not committed), then stored as one block', async () => {
    const ranges = new MemoryRanges();
    const log: string[] = [];
    const s = source(ranges, async (b) => void log.push(`sink ${b.range.min}-${b.range.max}`), 100, behind);
    await s.onBatch('t', 0, msgs(0, 3), at(log, 20));
    await s.onBatch('t', 0, msgs(4, 7), at(log, 20));
    expect(ranges.saved).toEqual([]);
    expect(log).toEqual(['resolve 3', 'resolve 7']);
    // This fetch reaches the end (high watermark 9 = last offset + 1).
    await s.onBatch('t', 0, msgs(8, 8), at(log, 9));
    expect(ranges.saved).toEqual(['t/0:0-8']);
    expect(log).toEqual(['resolve 3', 'resolve 7', 'sink 0-8', 'resolve 8', 'commit 9']);
  });

  it('a fetch that reaches the partition end, or without a high watermark, is stored at once', async () => {
    const ranges = new MemoryRanges();
    const log: string[] = [];
    const s = source(ranges, async (b) => void log.push(`sink ${b.range.min}-${b.range.max}`), 100, behind);
    await s.onBatch('t', 0, msgs(0, 3), at(log, 4));
    await s.onBatch('t', 0, msgs(4, 5), control(log));
    expect(log).toEqual(['sink 0-3', 'resolve 3', 'commit 4', 'sink 4-5', 'resolve 5', 'commit 6']);
  });

  it('a fetch with less than fetchMinBytes behind it (appended while it was answered) is stored at once', async () => {
    const ranges = new MemoryRanges();
    const log: string[] = [];
    // Test messages are 2 bytes each: 10 waiting are 20 bytes, 200 are 400.
    const s = source(ranges, async (b) => void log.push(`sink ${b.range.min}-${b.range.max}`), 100, {
      ...behind,
      fetchMinBytes: 100,
    });
    await s.onBatch('t', 0, msgs(0, 3), at(log, 14));
    expect(log).toEqual(['sink 0-3', 'resolve 3', 'commit 4']);
    // fetchMinBytes or more waiting: the next fetch is answered at once, so this one is held.
    await s.onBatch('t', 0, msgs(4, 7), at(log, 208));
    expect(log).toEqual(['sink 0-3', 'resolve 3', 'commit 4', 'resolve 7']);
    expect(ranges.saved).toEqual(['t/0:0-3']);
  });

  it("a partition still behind is held whatever its messages' age (freshnessMs bounds waits for arrivals)", async () => {
    const ranges = new MemoryRanges();
    const log: string[] = [];
    const s = source(ranges, async (b) => void log.push(`sink ${b.range.min}-${b.range.max}`), 100, {
      ...behind,
      freshnessMs: 1000,
    });
    const old = (from: number, to: number) =>
      msgs(from, to).map((m) => ({ ...m, timestamp: String(Date.now() - 10_000) }));
    await s.onBatch('t', 0, old(0, 3), at(log, 20));
    expect(log).toEqual(['resolve 3']);
    await s.onBatch('t', 0, old(4, 4), at(log, 5));
    expect(log).toEqual(['resolve 3', 'sink 0-4', 'resolve 4', 'commit 5']);
  });

  it('held messages are stored once they reach holdBytes, in blocks of at most maxBatch messages', async () => {
    const ranges = new MemoryRanges();
    const log: string[] = [];
    // Each test message is 2 bytes (`m0`): 8 messages reach 16 bytes.
    const s = source(ranges, async (b) => void log.push(`sink ${b.range.min}-${b.range.max}`), 5, {
      ...behind,
      holdBytes: 16,
    });
    await s.onBatch('t', 0, msgs(0, 3), at(log, 100));
    await s.onBatch('t', 0, msgs(4, 7), at(log, 100));
    expect(log).toEqual([
      'resolve 3',
      'sink 0-4',
      'resolve 4',
      'commit 5',
      'sink 5-7',
      'resolve 7',
      'commit 8',
    ]);
    expect(ranges.saved).toEqual(['t/0:0-4', 't/0:5-7']);
  });

  it('a failed store holds the earlier messages again; the batch delivered again replays the saved range', async () => {
    const ranges = new MemoryRanges();
    const log: string[] = [];
    const { s, seen, ok } = failingUntilOk(ranges, behind);
    await s.onBatch('t', 0, msgs(0, 3), at(log, 5));
    await expect(s.onBatch('t', 0, msgs(4, 4), at(log, 5))).rejects.toThrow('insert failed');
    ok();
    // kafkajs delivers the failed batch again (its offsets were not resolved), not the held one.
    await s.onBatch('t', 0, msgs(4, 4), at(log, 5));
    expect(shape(seen)).toEqual([
      { range: { min: 0, max: 4 }, n: 5, replay: false, skip: false },
      { range: { min: 0, max: 4 }, n: 5, replay: true, skip: false },
    ]);
    expect(ranges.saved).toEqual(['t/0:0-4']);
    expect(log).toEqual(['resolve 3', 'resolve 4', 'commit 5']);
  });

  it('a fetch behind the end that reaches a saved range is stored at once: the range replayed with its token', async () => {
    const ranges = new MemoryRanges();
    const log: string[] = [];
    const { s, seen, ok } = failingUntilOk(ranges, behind);
    // A fetch that reached the end is stored at once; its insert fails after its range was saved.
    await expect(s.onBatch('t', 0, msgs(0, 1), at(log, 2))).rejects.toThrow('insert failed');
    ok();
    // Delivered again with more behind it: not held, since it holds the saved range.
    await s.onBatch('t', 0, msgs(0, 7), at(log, 20));
    expect(shape(seen)).toEqual([
      { range: { min: 0, max: 1 }, n: 2, replay: false, skip: false },
      { range: { min: 0, max: 1 }, n: 2, replay: true, skip: false },
      { range: { min: 2, max: 7 }, n: 6, replay: false, skip: false },
    ]);
    expect(ranges.saved).toEqual(['t/0:0-1', 't/0:2-7']);
    expect(log).toEqual(['resolve 1', 'commit 2', 'resolve 7', 'commit 8']);
  });
});

describe('BlockSource.onBatch at the partition end while busy (fetches of several processors joined)', () => {
  const MiB = 1024 * 1024;
  /** `n` messages of 512 KiB from offset `from` */
  const big = (from: number, n: number): KafkaMessage[] =>
    Array.from(
      { length: n },
      (_, i) => ({ offset: String(from + i), value: Buffer.alloc(512 * 1024) }) as KafkaMessage,
    );
  const busy = { holdMs: 60_000, holdBytes: 64 * MiB, fetchMinBytes: MiB };
  /**
   * A source with the busy settings (and `over` them) on ranges of its own, whose sink records each
   * block in `log`.
   */
  const busySource = (over: Partial<Parameters<typeof source>[3]>) => {
    const ranges = new MemoryRanges();
    const log: string[] = [];
    const s = source(ranges, async (b) => void log.push(`sink ${b.range.min}-${b.range.max}`), 100, {
      ...busy,
      ...over,
    });
    return { s, ranges, log };
  };

  it('busyHold on: a fetch at the end that brought fetchMinBytes is held; the next one below it stores both as one block', async () => {
    const { s, ranges, log } = busySource({
      busyHold: 'on',
    });
    // 2 x 512 KiB = fetchMinBytes, and the fetch reached the end (high watermark = last offset + 1).
    await s.onBatch('t', 0, big(0, 2), control(log, { highWatermark: 2 }));
    await s.onBatch('t', 0, big(2, 2), control(log, { highWatermark: 4 }));
    expect(ranges.saved).toEqual([]);
    expect(log).toEqual(['resolve 1', 'resolve 3']);
    // Below fetchMinBytes: the partition is no longer busy.
    await s.onBatch('t', 0, msgs(4, 4), control(log, { highWatermark: 5 }));
    expect(ranges.saved).toEqual(['t/0:0-4']);
    expect(log).toEqual(['resolve 1', 'resolve 3', 'sink 0-4', 'resolve 4', 'commit 5']);
  });

  it('busy fetches are held for at most holdMs, then stored with the fetch that passes it', async () => {
    const { s, ranges, log } = busySource({
      holdMs: 150,
      busyHold: 'on',
    });
    // Only the clock is faked: the hold's own timer (real, at holdMs) has not fired when the next
    // fetch comes in with the clock past holdMs.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      await s.onBatch('t', 0, big(0, 2), control(log, { highWatermark: 2 }));
      vi.setSystemTime(Date.now() + 151);
      await s.onBatch('t', 0, big(2, 2), control(log, { highWatermark: 4 }));
    } finally {
      vi.useRealTimers();
    }
    expect(ranges.saved).toEqual(['t/0:0-3']);
    expect(log).toEqual(['resolve 1', 'sink 0-3', 'resolve 3', 'commit 4']);
  });

  it('in a group of N processors busy fetches are held up to N x holdMs (at most BUSY_HOLD_MAX_MEMBERS x)', async () => {
    for (const [members, limit] of [
      [2, 300],
      [3, 450],
      [10, BUSY_HOLD_MAX_MEMBERS * 150],
    ] as const) {
      const { s, ranges, log } = busySource({ holdMs: 150, busyHold: 'auto' });
      s.groupDescribed(members);
      expect(s.holdLimitMs()).toBe(limit);
      const t0 = Date.now();
      vi.useFakeTimers({ toFake: ['Date'] });
      try {
        vi.setSystemTime(t0);
        await s.onBatch('t', 0, big(0, 2), control(log, { highWatermark: 2 }));
        // Past holdMs but within the group's limit: still held.
        vi.setSystemTime(t0 + limit - 1);
        await s.onBatch('t', 0, big(2, 2), control(log, { highWatermark: 4 }));
        expect(ranges.saved).toEqual([]);
        vi.setSystemTime(t0 + limit + 1);
        await s.onBatch('t', 0, big(4, 2), control(log, { highWatermark: 6 }));
      } finally {
        vi.useRealTimers();
      }
      expect(ranges.saved).toEqual(['t/0:0-5']);
      expect(log).toEqual(['resolve 1', 'resolve 3', 'sink 0-5', 'resolve 5', 'commit 6']);
    }
    // Alone in its group (busyHold auto): nothing is held, so the limit is holdMs itself.
    const { s } = busySource({ holdMs: 150, busyHold: 'auto' });
    s.groupDescribed(1);
    expect([s.busyHoldActive, s.holdLimitMs()]).toEqual([false, 150]);
  });

  it('busyHold auto outside a shared group, or off: every fetch at the end is stored at once', async () => {
    for (const busyHold of ['auto', 'off'] as const) {
      const { s, log } = busySource({ busyHold });
      await s.onBatch('t', 0, big(0, 2), control(log, { highWatermark: 2 }));
      expect(log).toEqual(['sink 0-1', 'resolve 1', 'commit 2']);
    }
  });

  it('freshnessMs: a busy fetch whose oldest message is already that old is stored at once, not held', async () => {
    const { s, ranges, log } = busySource({ busyHold: 'on', freshnessMs: 1000 });
    /** `big(from, n)` with Kafka timestamps `ageMs` ago */
    const aged = (from: number, n: number, ageMs: number) =>
      big(from, n).map((m) => ({ ...m, timestamp: String(Date.now() - ageMs) }));
    // 200 ms old: held (the bound is 1 s), as without a bound.
    await s.onBatch('t', 0, aged(0, 2, 200), control(log, { highWatermark: 2 }));
    expect(log).toEqual(['resolve 1']);
    // The hold's oldest message is the one that counts: 1.2 s old now, past the bound.
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 1000);
      await s.onBatch('t', 0, aged(2, 2, 0), control(log, { highWatermark: 4 }));
    } finally {
      vi.useRealTimers();
    }
    expect(log).toEqual(['resolve 1', 'sink 0-3', 'resolve 3', 'commit 4']);
    // A first fetch already past the bound is not held at all.
    await s.onBatch('t', 0, aged(4, 2, 1500), control(log, { highWatermark: 6 }));
    expect(log.slice(4)).toEqual(['sink 4-5', 'resolve 5', 'commit 6']);
    expect(ranges.saved).toEqual(['t/0:0-3', 't/0:4-5']);
  });

  it('a busy fetch below BUSY_MIN_BYTES is never held, whatever fetchMinBytes says', async () => {
    const { s, log } = busySource({
      fetchMinBytes: 1,
      busyHold: 'on',
    });
    await s.onBatch('t', 0, msgs(0, 3), control(log, { highWatermark: 4 }));
    expect(log).toEqual(['sink 0-3', 'resolve 3', 'commit 4']);
  });
});
