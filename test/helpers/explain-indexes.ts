import type { ClickHouseClient } from '../../services/shared/clickhouse.js';

export interface PlanIndex {
  Type: string;
  Name?: string;
  'Initial Granules': number;
  'Selected Granules': number;
}

/**
 * The indexes of every MergeTree read in a SELECT's plan, with the granules each kept, from
 * ClickHouse's own account of the read (`EXPLAIN indexes = 1`, JSON).
 */
export async function planIndexes(ch: ClickHouseClient, select: string): Promise<PlanIndex[]> {
  const res = await ch.query({ query: `EXPLAIN indexes = 1, json = 1 ${select}`, format: 'TabSeparatedRaw' });
  const found: PlanIndex[] = [];
  const walk = (node: unknown): void => {
    if (!node || typeof node !== 'object') return;
    const n = node as { 'Node Type'?: string; Indexes?: PlanIndex[]; Plans?: unknown[]; Plan?: unknown };
    if (n['Node Type'] === 'ReadFromMergeTree') found.push(...(n.Indexes ?? []));
    for (const child of [n.Plan, ...(n.Plans ?? [])]) walk(child);
  };
  for (const top of JSON.parse(await res.text()) as unknown[]) walk(top);
  return found;
}
