import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { pino } from 'pino';
import { localPostgresUrl, startPostgres, type PostgresHandle } from '../infra/local/postgres.launcher.js';
import { createAccount } from './api/accounts/accounts.service.js';
import { createClickHouse, isChdb } from './shared/clickhouse.js';
import { ensureClickHouseDatabase } from './shared/clickhouse-database.js';
import { rebuildMetrics, RebuildRefused } from './shared/clickhouse-rebuild.js';
import { config, environmentVariable } from './shared/config.js';
import { logger, type Logger } from './shared/logger.js';
import { createPool, migratePostgres } from './shared/postgres.js';
import { hashPassword, passwordProblem } from './shared/passwords.js';
import { applyPlan, describeStep, plan } from './settings/settings-as-code.js';
import { SettingsApi, SettingsError } from './settings/settings-api.js';
import { exportSettings, readDocument } from './settings/settings-document.js';
import { viewSwapLock } from './shared/view-insert-lock.js';

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
       npm run admin -- export --account ACCOUNT_SID > tapline.yaml
       npm run admin -- apply FILE [--account ACCOUNT_SID] [--dry-run]
       npm run admin -- rebuild-metrics

create-account prints one JSON object {accountSid, userSid, sessionToken, apiToken[, bucketSid]}.
set-password sets a user's dashboard password (read from standard input without --password) and
ends their sessions.
export prints an account's buckets, rules, workflows and stream views as YAML (secrets as \${NAME});
apply makes an account (the file's, or --account) match a file and prints the plan; --dry-run
only prints it (docs/settings-as-code.md).
rebuild-metrics rebuilds every metrics aggregate from the stored requests while traffic flows
(with embedded chDB, stop the service first: docs/operations.md).
The commands use DATABASE_URL, or the local stack's Postgres (started for the command if it is not
running); rebuild-metrics uses it only with a ClickHouse server, for the lock its swaps hold.`;

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
      account: { type: 'string' },
      'dry-run': { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  const command = positionals[0];
  const valid =
    (command === 'create-account' && values.name && values.email) ||
    (command === 'set-password' && values.email) ||
    (command === 'export' && values.account) ||
    (command === 'apply' && positionals[1]) ||
    command === 'rebuild-metrics';
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
  if (command === 'rebuild-metrics') return rebuildMetricsCommand(cfg);
  // export writes YAML on standard output: its log lines go to standard error.
  const settingsCommand = command === 'export' || command === 'apply';
  const log = settingsCommand ? pino({ level: 'warn' }, pino.destination(2)) : logger('admin');
  let fileText: string | undefined;
  if (command === 'apply') {
    try {
      fileText = await readFile(positionals[1]!, 'utf8');
    } catch (err) {
      process.stderr.write(`admin: cannot read ${positionals[1]}: ${(err as Error).message}\n`);
      return 2;
    }
  }
  const { url, started } = await stackPostgres(cfg, log);
  const pool = createPool(url, 2, log);
  try {
    await migratePostgres(url, log);
    if (settingsCommand) return await settings(pool, cfg, log, values, fileText);
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

/** DATABASE_URL, or the local stack's Postgres (started for the command if it is not running). */
async function stackPostgres(
  cfg: ReturnType<typeof config>,
  log: Logger,
): Promise<{ url: string; started: PostgresHandle | undefined }> {
  if (cfg.postgres.url) return { url: cfg.postgres.url, started: undefined };
  const pgDir = path.join(cfg.dataDir, 'postgres');
  const url = localPostgresUrl(pgDir, cfg.postgres.port, 'tapline');
  if (url && (await canConnect(url))) return { url, started: undefined };
  const started = await startPostgres({ dataDir: pgDir, port: cfg.postgres.port, database: 'tapline', log });
  return { url: started.url, started };
}

/**
 * `rebuild-metrics` (docs/operations.md "Rebuilding the metrics"): progress on standard error. On a
 * ClickHouse server the swaps hold the Postgres lock the processors' inserts hold shared, in the
 * stack's Postgres (view-insert-lock.ts).
 */
async function rebuildMetricsCommand(cfg: ReturnType<typeof config>): Promise<number> {
  const log = logger('admin');
  await ensureClickHouseDatabase(cfg.clickhouse);
  const ch = createClickHouse(cfg.clickhouse);
  const stack = isChdb(ch) ? undefined : await stackPostgres(cfg, log);
  const pool = stack && createPool(stack.url, 1, log);
  try {
    const result = await rebuildMetrics(ch, cfg.clickhouse, log, {
      onProgress: ({ step, table }) => {
        process.stderr.write(`rebuild-metrics: ${step}${table ? ` ${table}` : ''}\n`);
      },
      swapLock: pool && viewSwapLock(pool),
    });
    process.stdout.write(
      `Rebuilt ${result.tables.join(', ')} from ${result.backfilled} requests stored before ${result.cutoff} ` +
        `and every request stored since.\n` +
        (result.emptied.length
          ? `Emptied ${result.emptied.join(', ')}: written before a migration moved their rows, which are in the rebuilt tables now.\n`
          : ''),
    );
    return 0;
  } catch (err) {
    if (!(err instanceof RebuildRefused)) throw err;
    process.stderr.write(`admin: ${err.message}\n`);
    return 1;
  } finally {
    await ch.close();
    await pool?.end();
    await stack?.started?.stop();
  }
}

/** `export` and `apply` (docs/settings-as-code.md); a refusal is printed with the API's message. */
async function settings(
  pool: pg.Pool,
  cfg: ReturnType<typeof config>,
  log: Parameters<typeof SettingsApi.open>[2],
  values: { account?: string; 'dry-run'?: boolean },
  fileText: string | undefined,
): Promise<number> {
  let api: SettingsApi | undefined;
  try {
    if (fileText === undefined) {
      api = await SettingsApi.open(pool, cfg, log, values.account!);
      const { yaml, secrets } = await exportSettings(api);
      process.stdout.write(yaml);
      if (secrets.length)
        process.stderr.write(
          `The file references ${secrets.length} secret(s) as \${NAME}; set them before an apply:\n` +
            secrets.map((s) => `  ${s}\n`).join(''),
        );
      return 0;
    }
    const doc = readDocument(fileText, environmentVariable);
    const account = values.account ?? doc.account;
    if (!account) throw new SettingsError('no account: name it in the file (account:) or with --account');
    api = await SettingsApi.open(pool, cfg, log, account);
    const steps = await plan(api, doc);
    process.stdout.write(steps.length ? steps.map((s) => `${describeStep(s)}\n`).join('') : 'No changes.\n');
    if (values['dry-run'] || steps.length === 0) return 0;
    await applyPlan(api, steps);
    process.stdout.write(`Applied ${steps.length} change(s) to ${account}.\n`);
    return 0;
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err;
    process.stderr.write(`admin: ${err.message}\n`);
    return 1;
  } finally {
    await api?.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`admin: ${err.message}\n`);
    process.exit(1);
  },
);
