import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createClickHouse, migrateClickHouse } from '../../services/shared/clickhouse.js';
import { testEnv } from '../helpers/client.js';
import { embeddedClickHouse } from '../helpers/embedded-clickhouse.js';

/**
 * Issue 14 point 9: ClickHouse migrators of several processes (docker-compose starts one per
 * role against one ClickHouse server) are serialised by a Postgres advisory lock. Another
 * session holds the lock: the migrator waits for it, then applies everything once.
 * (test/unit/clickhouse-migrations.test.ts covers concurrent and repeated runs in one process.)
 */
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tapline-chlock-'));
const cfg = embeddedClickHouse(dir);
const LOCK = 'tapline:clickhouse-migrations:tapline';
const pool = new pg.Pool({ connectionString: testEnv().databaseUrl, max: 4 });
const ch = createClickHouse(cfg);

afterAll(async () => {
  await ch.close();
  await pool.end();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('ClickHouse migration lock (Postgres advisory lock)', () => {
  it('waits while another process holds the lock, then migrates once', async () => {
    const other = await pool.connect();
    let finished = false;
    try {
      await other.query('SELECT pg_advisory_lock(hashtext($1))', [LOCK]);
      const run = migrateClickHouse(ch, cfg, pino({ level: 'silent' }), pool).then((n) => {
        finished = true;
        return n;
      });
      await new Promise((r) => setTimeout(r, 3000));
      expect(finished).toBe(false);
      const tables = await (
        await ch.query({
          query: `SELECT name FROM system.tables WHERE database = currentDatabase() AND name = 'requests'`,
          format: 'JSONEachRow',
        })
      ).json();
      expect(tables).toEqual([]);
      await other.query('SELECT pg_advisory_unlock(hashtext($1))', [LOCK]);
      const applied = await run;
      expect(applied).toBeGreaterThanOrEqual(4);
      // The lock is free again: nothing left to apply, and it returns at once.
      expect(await migrateClickHouse(ch, cfg, pino({ level: 'silent' }), pool)).toBe(0);
      const held = await pool.query(
        `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = hashtext($1)::oid`,
        [LOCK],
      );
      expect(held.rows[0].n).toBe(0);
    } finally {
      other.release();
    }
  }, 120_000);
});
