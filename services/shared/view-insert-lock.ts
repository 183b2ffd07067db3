import type pg from 'pg';
import { isChdb, type ClickHouseClient } from './clickhouse.js';
import { logger } from './logger.js';

/**
 * The inserts that feed the materialized views and the table swaps of `rebuild-metrics` exclude
 * each other through one Postgres advisory lock (docs/operations.md "Rebuilding the metrics").
 *
 * An INSERT resolves the target of each view in its chain by name, one view after the other. The
 * rebuild swaps each live target with its rebuilt copy (`EXCHANGE TABLES`) while a second chain of
 * views fills the copy; an insert whose chain is resolved across a swap can reach the rebuilt table
 * through both chains (the block is counted twice) or through neither (it is lost there). So:
 * - every insert into a view's source table (`requests`, `requests_deleted`) and the consumers'
 *   seal (which reads a target and inserts the difference) holds the lock shared, which costs two
 *   round trips to Postgres per block and never waits while no rebuild swaps;
 * - the rebuild holds it exclusively for its swaps only: they wait for the inserts in flight, and
 *   the inserts that start meanwhile wait for the swaps (milliseconds).
 *
 * Only with a ClickHouse server: chDB runs one statement at a time in the one process that has its
 * data directory open, and the rebuild runs there only while the service is stopped.
 */
const LOCK = "hashtextextended('tapline.view-inserts', 0)";

export type ViewInsertLock = <T>(fn: () => Promise<T>) => Promise<T>;

/** Runs `fn` directly: chDB, or a caller with no Postgres (the lock guards nothing there). */
export const noViewInsertLock: ViewInsertLock = (fn) => fn();

/**
 * Runs `fn` holding the lock in `mode` on a connection of its own. When Postgres cannot give the
 * lock (unreachable, or no free connection in time), `unavailable` decides: the inserts go on
 * without it (a rebuild cannot be swapping without Postgres either, and a stalled pipeline is
 * worse than the rare double count it guards against); the rebuild fails.
 */
async function holding<T>(
  pool: pg.Pool,
  mode: 'shared' | 'exclusive',
  fn: () => Promise<T>,
  unavailable: (err: unknown) => void,
): Promise<T> {
  const suffix = mode === 'shared' ? '_shared' : '';
  let conn: pg.PoolClient | undefined;
  try {
    conn = await pool.connect();
    await conn.query(`SELECT pg_advisory_lock${suffix}(${LOCK})`);
  } catch (err) {
    conn?.release(true);
    unavailable(err);
    return fn();
  }
  try {
    return await fn();
  } finally {
    // A failed unlock (the connection broke) ends the session, which frees the lock: the client
    // is destroyed rather than returned to the pool.
    const unlocked = await conn.query(`SELECT pg_advisory_unlock${suffix}(${LOCK})`).then(
      () => true,
      () => false,
    );
    conn.release(!unlocked);
  }
}

/** What an insert into a view's source through `ch` holds: the lock shared, on a ClickHouse server. */
export function viewInsertLock(pool: pg.Pool | undefined, ch: ClickHouseClient): ViewInsertLock {
  if (!pool || isChdb(ch)) return noViewInsertLock;
  const log = logger('view-insert-lock');
  return (fn) =>
    holding(pool, 'shared', fn, (err) =>
      log.warn({ err }, 'view insert lock unavailable (postgres): inserting without it'),
    );
}

/** What the rebuild's swaps hold: the lock exclusively. */
export function viewSwapLock(pool: pg.Pool): ViewInsertLock {
  return (fn) =>
    holding(pool, 'exclusive', fn, (err) => {
      throw err;
    });
}
