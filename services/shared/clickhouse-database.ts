import { createClient } from '@clickhouse/client';
import type { Config } from './config.js';

/**
 * Creates CLICKHOUSE_DATABASE on a ClickHouse server when it is missing. A client bound to a
 * database sends it with every request, and the server refuses any query naming a database that
 * does not exist, so this runs through a client bound to nothing (the server's `default`) before
 * the service's own client is made. chDB needs no such step (it ignores the client's database).
 */
export async function ensureClickHouseDatabase(cfg: Config['clickhouse']): Promise<void> {
  if (!cfg.url) return;
  const admin = createClient({
    url: cfg.url,
    username: cfg.user,
    password: cfg.password,
    request_timeout: 30_000,
  });
  try {
    await admin.command({ query: `CREATE DATABASE IF NOT EXISTS ${cfg.database}` });
  } finally {
    await admin.close();
  }
}
