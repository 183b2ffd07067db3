import { Kafka, logLevel, type Admin } from 'kafkajs';

export interface GroupLag {
  /** messages not yet committed by the group, summed over partitions */
  lag: number;
  /** sum of the partitions' high watermarks (grows with every produced message) */
  high: number;
  /** sum of the committed offsets (grows with every commit) */
  committed: number;
  partitions: { partition: number; high: number; committed: number; lag: number }[];
}

/** A small admin client for lag probes; retries kept short so a dead broker answers quickly. */
export function lagAdmin(brokers: string[]): Admin {
  return new Kafka({
    clientId: 'tapline-lag-probe',
    brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 2000,
    requestTimeout: 5000,
    retry: { retries: 1, initialRetryTime: 200 },
  }).admin();
}

/**
 * Consumer lag of `groupId` on `topic`: high watermark minus committed offset per partition
 * (a partition the group never committed counts from its low watermark).
 */
export async function groupLag(admin: Admin, groupId: string, topic: string): Promise<GroupLag> {
  const [watermarks, committed] = await Promise.all([
    admin.fetchTopicOffsets(topic),
    admin.fetchOffsets({ groupId, topics: [topic] }),
  ]);
  const byPartition = new Map(
    (committed.find((t) => t.topic === topic)?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]),
  );
  const partitions = watermarks.map((w) => {
    const high = Number(w.high);
    const c = byPartition.get(w.partition) ?? -1;
    const from = c >= 0 ? c : Number(w.low);
    return { partition: w.partition, high, committed: c, lag: Math.max(0, high - from) };
  });
  return {
    lag: partitions.reduce((s, p) => s + p.lag, 0),
    high: partitions.reduce((s, p) => s + p.high, 0),
    committed: partitions.reduce((s, p) => s + Math.max(0, p.committed), 0),
    partitions,
  };
}
