import { TABLES } from '../../shared/tables.js';

/**
 * A consumer's effective name and group (docs/consumers.md): the one written last, through
 * `PUT …/consumers/{id}` (Postgres, with its instant) or by a record that carried one
 * (ClickHouse `consumer_labels`, with the record's createdAt). The account's names set through the
 * API go into each query as array parameters, so ClickHouse resolves, searches, groups, sorts and
 * pages on the effective label.
 */

export interface Override {
  id: string;
  name: string | null;
  nameAt: number;
  group: string | null;
  groupAt: number;
}

/**
 * The effective labels of consumers as a subquery (`cid`, `name`, `grp`, `fs`, `ls`: first and last
 * seen, epoch ms), from consumer_labels of the account (and buckets in scope) and the overrides
 * passed as the parameters `oid`, `onm`, `ont`, `ogr`, `ogt`.
 */
export function labelsSql(where: string): string {
  return `SELECT consumer_id AS cid,
      indexOf({oid:Array(String)}, consumer_id) AS oi,
      if(oi > 0 AND {ont:Array(Int64)}[oi] >= toUnixTimestamp64Milli(max(name_at)), {onm:Array(String)}[oi], argMaxMerge(name)) AS name,
      if(oi > 0 AND {ogt:Array(Int64)}[oi] >= toUnixTimestamp64Milli(max(group_at)), {ogr:Array(String)}[oi], argMaxMerge(grp)) AS grp,
      toUnixTimestamp64Milli(min(first_seen)) AS fs,
      toUnixTimestamp64Milli(max(last_seen)) AS ls
    FROM ${TABLES.consumerLabels}
    WHERE ${where}
    GROUP BY consumer_id`;
}

/** The override arrays as query parameters (an unset name or group never wins: instant -1). */
export function overrideParams(overrides: readonly Override[]): Record<string, unknown> {
  return {
    oid: overrides.map((o) => o.id),
    onm: overrides.map((o) => o.name ?? ''),
    ont: overrides.map((o) => (o.name === null ? -1 : o.nameAt)),
    ogr: overrides.map((o) => o.group ?? ''),
    ogt: overrides.map((o) => (o.group === null ? -1 : o.groupAt)),
  };
}

/**
 * The condition "the row's consumer is in the group `{grp:String}`" for the aggregate tables of
 * an account `{a:String}` (the metrics' `group=`); its parameters: `a`, `grp` and `overrideParams`.
 */
export const IN_GROUP = `consumer_id IN (SELECT cid FROM (${labelsSql('account_sid = {a:String}')}) WHERE grp = {grp:String})`;
