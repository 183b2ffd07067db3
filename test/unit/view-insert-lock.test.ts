import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from '@clickhouse/client';
import { viewInsertLock, viewSwapLock } from '../../services/shared/view-insert-lock.js';
import { freePort } from '../helpers/service-process.js';

/**
 * The view-insert lock when Postgres cannot give it (docs/operations.md "Rebuilding the
 * metrics"): an insert goes on without it rather than stall the pipeline, and the rebuild's swaps
 * fail instead of swapping unguarded. Postgres here is a port nothing listens on.
 */
const port = await freePort();
const pool = new pg.Pool({
  connectionString: `postgres://x:y@127.0.0.1:${port}/none`,
  connectionTimeoutMillis: 1000,
});
// A client of a ClickHouse server (never contacted): the lock applies to server mode only.
const server = createClient({ url: `http://127.0.0.1:${port}` });

afterAll(async () => {
  await pool.end();
  await server.close();
});

describe('view-insert lock without Postgres', () => {
  it('runs the insert without the lock', async () => {
    let ran = 0;
    const result = await viewInsertLock(
      pool,
      server,
    )(async () => {
      ran++;
      return 'stored';
    });
    expect(result).toBe('stored');
    expect(ran).toBe(1);
  });

  it('refuses the swaps', async () => {
    let ran = 0;
    await expect(
      viewSwapLock(pool)(async () => {
        ran++;
      }),
    ).rejects.toThrow(/ECONNREFUSED|connect/);
    expect(ran).toBe(0);
  });

  it('needs no Postgres without a pool', async () => {
    expect(await viewInsertLock(undefined, server)(async () => 7)).toBe(7);
  });
});
