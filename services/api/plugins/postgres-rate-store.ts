import type pg from 'pg';

/** What @fastify/rate-limit expects of a store's `incr`: the count so far and the ms left. */
interface WindowState {
  current: number;
  ttl: number;
}
type Callback = (err: Error | null, res?: WindowState) => void;

/**
 * Counts one request of `key` in a fixed window that starts at the key's first request, on
 * Postgres's clock: one row per key, reset when its window has passed. Every replica counts in the
 * same row, so N replicas allow the plan's limit, not N times it.
 */
const INCR_SQL = `
INSERT INTO api_rate_windows AS w (key, window_start, count) VALUES ($1, now(), 1)
ON CONFLICT (key) DO UPDATE SET
  window_start = CASE WHEN w.window_start + $2 * interval '1 millisecond' <= now() THEN now() ELSE w.window_start END,
  count = CASE WHEN w.window_start + $2 * interval '1 millisecond' <= now() THEN 1 ELSE w.count + 1 END
RETURNING count,
  GREATEST(0, EXTRACT(EPOCH FROM (window_start + $2 * interval '1 millisecond' - now())) * 1000)::float8 AS ttl_ms`;

const READ_SQL = `
SELECT count, GREATEST(0, EXTRACT(EPOCH FROM (window_start + $2 * interval '1 millisecond' - now())) * 1000)::float8 AS ttl_ms
FROM api_rate_windows WHERE key = $1 AND window_start + $2 * interval '1 millisecond' > now()`;

/**
 * A @fastify/rate-limit store class bound to a pool (the plugin constructs the store itself, so
 * the pool comes in through the closure).
 */
export function postgresRateStore(pool: pg.Pool) {
  const run = (sql: string, key: string, timeWindow: number, cb: Callback) => {
    pool.query<{ count: number; ttl_ms: number }>(sql, [key, timeWindow]).then(
      (r) => {
        const row = r.rows[0];
        cb(null, row ? { current: row.count, ttl: Math.round(row.ttl_ms) } : { current: 0, ttl: timeWindow });
      },
      (err: Error) => cb(err),
    );
  };
  return class PostgresRateStore {
    incr(key: string, cb: Callback, timeWindow: number): void {
      run(INCR_SQL, key, timeWindow, cb);
    }
    read(key: string, cb: Callback, timeWindow: number): void {
      run(READ_SQL, key, timeWindow, cb);
    }
    child(): this {
      return this;
    }
  };
}

/**
 * The window of `key` as it stands, without counting: `used` calls so far and when the window
 * ends (null when no window is open).
 */
export async function readWindow(
  pool: pg.Pool,
  key: string,
  timeWindow: number,
): Promise<{ used: number; resetAt: Date | null }> {
  const r = await pool.query<{ count: number; ttl_ms: number }>(READ_SQL, [key, timeWindow]);
  const row = r.rows[0];
  // To the second, as X-RateLimit-Reset carries it.
  const resetAt = row && new Date(Math.ceil((Date.now() + row.ttl_ms) / 1000) * 1000);
  return row && resetAt ? { used: row.count, resetAt } : { used: 0, resetAt: null };
}
