import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { localPostgresUrl, startPostgres, type PostgresHandle } from '../infra/local/postgres.launcher.js';
import { createAccount } from './api/accounts.service.js';
import { config } from './shared/config.js';
import { logger } from './shared/logger.js';
import { createPool, migratePostgres } from './shared/postgres.js';
import { hashPassword, passwordProblem } from './shared/passwords.js';

/** One line from standard input; on a terminal the typed characters are not echoed. */
async function readPassword(): Promise<string> {
  const stdin = process.stdin;
  if (stdin.isTTY) {
    process.stderr.write('New password: ');
    stdin.setRawMode(true);
  }
  let buf = '';
  stdin.setEncoding('utf8');
  for await (const chunk of stdin as AsyncIterable<string>) {
    buf += chunk;
    // Enter ends the line; Ctrl-C / Ctrl-D (raw mode delivers them as characters) end it too.
    const nl = [...buf].findIndex((c) => c === '\r' || c === '\n' || c === '\u0003' || c === '\u0004');
    if (nl >= 0) {
      buf = buf.slice(0, nl);
      break;
    }
  }
  if (stdin.isTTY) {
    stdin.setRawMode(false);
    process.stderr.write('\n');
  }
  stdin.pause();
  return buf;
}

const USAGE = `usage: npm run admin -- create-account --name NAME --email EMAIL [--plan standard|pro|enterprise] [--rate-limit N] [--bucket NAME] [--password P]
       npm run admin -- set-password --email EMAIL [--password P]

create-account prints one JSON object {accountSid, userSid, sessionToken, apiToken[, bucketSid]}.
set-password sets a user's dashboard password (read from standard input without --password) and
ends their sessions.
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
      password: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  const command = positionals[0];
  const valid =
    (command === 'create-account' && values.name && values.email) ||
    (command === 'set-password' && values.email);
  if (values.help || !valid) {
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
    if (command === 'set-password') {
      const password = values.password ?? (await readPassword());
      const problem = passwordProblem(password);
      if (problem) {
        process.stderr.write(`admin: the password ${problem}\n`);
        return 2;
      }
      const hash = await hashPassword(password);
      const r = await pool.query<{ sid: string }>(
        'UPDATE users SET password_hash = $2 WHERE lower(email) = lower($1) RETURNING sid',
        [values.email, hash],
      );
      const user = r.rows[0];
      if (!user) {
        process.stderr.write(`admin: no user with the email ${values.email}\n`);
        return 1;
      }
      await pool.query('UPDATE sessions SET ended_at = now() WHERE user_sid = $1 AND ended_at IS NULL', [
        user.sid,
      ]);
      process.stdout.write(`Password set for ${values.email}; their existing sessions are ended.\n`);
      return 0;
    }
    const created = await createAccount(pool, {
      name: values.name!,
      email: values.email!,
      plan,
      rateLimit: values['rate-limit'] ? Number(values['rate-limit']) : undefined,
      bucketName: values.bucket,
      password: values.password,
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
