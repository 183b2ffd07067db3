import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { localPostgresUrl, startPostgres, type PostgresHandle } from '../infra/local/postgres.launcher.js';
import { createAccount } from './api/accounts.service.js';
import { config } from './shared/config.js';
import { logger } from './shared/logger.js';
import { createPool, migratePostgres } from './shared/postgres.js';

const USAGE = `usage: npm run admin -- create-account --name NAME --email EMAIL [--plan standard|pro|enterprise] [--rate-limit N] [--bucket NAME]

Prints one JSON object {accountSid, userSid, sessionToken, apiToken[, bucketSid]}.
Uses DATABASE_URL, or the local stack's Postgres (started for the command if it is not running).`;

async function canConnect(url: string): Promise<boolean> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1500 });
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
}

async function main(): Promise<number> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      email: { type: 'string' },
      plan: { type: 'string' },
      'rate-limit': { type: 'string' },
      bucket: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help || positionals[0] !== 'create-account' || !values.name || !values.email) {
    process.stderr.write(USAGE + '\n');
    return values.help ? 0 : 2;
  }
  const plan = (values.plan ?? 'standard') as 'standard' | 'pro' | 'enterprise';
  if (!['standard', 'pro', 'enterprise'].includes(plan)) {
    process.stderr.write(`--plan must be standard, pro or enterprise\n`);
    return 2;
  }
  const cfg = config();
  const log = logger('admin');
  let url = cfg.postgres.url;
  let started: PostgresHandle | undefined;
  if (!url) {
    const pgDir = path.join(cfg.dataDir, 'postgres');
    url = localPostgresUrl(pgDir, cfg.postgres.port, 'tapline');
    if (!url || !(await canConnect(url))) {
      started = await startPostgres({ dataDir: pgDir, port: cfg.postgres.port, database: 'tapline', log });
      url = started.url;
    }
  }
  const pool = createPool(url, 2, log);
  try {
    await migratePostgres(url, log);
    const created = await createAccount(pool, {
      name: values.name,
      email: values.email,
      plan,
      rateLimit: values['rate-limit'] ? Number(values['rate-limit']) : undefined,
      bucketName: values.bucket,
    });
    process.stdout.write(JSON.stringify(created) + '\n');
    return 0;
  } finally {
    await pool.end();
    await started?.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`admin: ${err.message}\n`);
    process.exit(1);
  },
);
