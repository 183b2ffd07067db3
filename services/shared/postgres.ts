import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { runner } from 'node-pg-migrate';
import type { Logger } from './logger.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const PG_MIGRATIONS_DIR = path.join(projectRoot(), 'infra', 'postgres', 'migrations');

/** The project root: the folder holding package.json, whether running from source or dist/. */
export function projectRoot(): string {
  // services/shared -> root, or dist/services/shared -> root
  const up2 = path.resolve(here, '..', '..');
  return path.basename(up2) === 'dist' ? path.dirname(up2) : up2;
}

// NOTE: timestamptz must come back as Date, bigint counts as numbers (they stay far below 2^53).
pg.types.setTypeParser(20, (v) => Number(v));

export type Pool = pg.Pool;

export function createPool(url: string, size: number, log: Logger): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: size, connectionTimeoutMillis: 3000 });
  // An idle client losing its connection (Postgres restart) must not crash the process.
  pool.on('error', (err) => log.warn({ err: err.message }, 'postgres idle client error'));
  // Nor must a checked-out one: the pool takes its own error listener off a client it hands out
  // (`pool.connect()`), and a client emitting 'error' without a listener throws out of the socket's
  // handler. The client's running query is rejected with the same error, which its caller handles;
  // the pool drops the client when it is released with that error.
  pool.on('connect', (client) =>
    client.on('error', (err) => log.warn({ err: err.message }, 'postgres client connection lost')),
  );
  return pool;
}

export async function migratePostgres(url: string, log: Logger): Promise<number> {
  const applied = await runner({
    databaseUrl: url,
    dir: PG_MIGRATIONS_DIR,
    direction: 'up',
    migrationsTable: 'schema_migrations',
    checkOrder: true,
    singleTransaction: true,
    advisoryLockMode: 'wait',
    log: (msg: string) => log.debug(msg),
  } as Parameters<typeof runner>[0]);
  if (applied.length) log.info({ count: applied.length }, 'postgres migrations applied');
  return applied.length;
}

/** True when a pg error means "the server is not reachable", so callers answer 503. */
export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  if (!e) return false;
  if (
    e.code &&
    [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'EPIPE',
      '57P01',
      '57P02',
      '57P03',
      '08006',
      '08001',
      '08003',
    ].includes(e.code)
  )
    return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    e.message ?? '',
  );
}
