import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { startLocalStack, type LocalStack } from '../../infra/local/stack.js';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { parseConfig } from '../../services/shared/config.js';
import { TOPICS } from '../../services/shared/topics.js';
import type { FaultAccount } from '../faults/fault-stack.js';
import { freePort, ROOT, startService, type ServiceProcess } from '../helpers/service-process.js';

export const SCALE_RUNS_DIR = path.join(ROOT, '.cache', 'scale-runs');

/** One Tapline process of the scaled deployment: its role list and what it listens on. */
export interface RoleProcess {
  name: string;
  roles: string;
  service: ServiceProcess;
  env: Record<string, string>;
}

/**
 * The scaled deployment on one machine: one Kafka broker, one Postgres and one ClickHouse server
 * (the local stack with CLICKHOUSE_MODE=server), and Tapline as separate processes per role, all
 * pointed at them with KAFKA_BROKERS, DATABASE_URL and CLICKHOUSE_URL exactly as docker-compose
 * does. Each process gets its own DATA_DIR (nothing is shared through the file system).
 */
export class ScaledStack {
  readonly processes: RoleProcess[] = [];

  private constructor(
    readonly runDir: string,
    readonly stack: LocalStack,
    readonly pool: pg.Pool,
    readonly baseEnv: Record<string, string>,
  ) {}

  static async start(name: string, extraEnv: Record<string, string> = {}): Promise<ScaledStack> {
    const runDir = path.join(SCALE_RUNS_DIR, `${name}-${Date.now()}-${process.pid}`);
    const dataDir = path.join(runDir, 'stack');
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o755 });
    // embedded Postgres runs as the `postgres` user when we are root: it must reach its folder.
    for (const d of [SCALE_RUNS_DIR, runDir, dataDir]) fs.chmodSync(d, 0o755);
    const cfg = parseConfig({
      KAFKA_PORT: String(await freePort()),
      KAFKA_CONTROLLER_PORT: String(await freePort()),
      PG_PORT: String(await freePort()),
      CLICKHOUSE_MODE: 'server',
      DATA_DIR: dataDir,
      CACHE_DIR: path.join(ROOT, '.cache'),
    });
    const stack = await startLocalStack(cfg, pino({ level: process.env.SCALE_STACK_LOG ?? 'warn' }));
    const pool = new pg.Pool({ connectionString: stack.databaseUrl, max: 3 });
    pool.on('error', () => undefined);
    return new ScaledStack(runDir, stack, pool, {
      KAFKA_BROKERS: stack.kafkaBrokers.join(','),
      DATABASE_URL: stack.databaseUrl,
      CLICKHOUSE_URL: stack.clickhouseUrl!,
      KAFKA_REQUESTS_PARTITIONS: '2',
      PROCESSOR_FLUSH_MS: '100',
      PROCESSOR_HOLD_MS: '500',
      OUTBOUND_ALLOW: '127.0.0.1,localhost,::1',
      ACTION_BACKOFF_MS: '200',
      ACTION_TIMEOUT_MS: '2000',
      SCHEDULER_THRESHOLD_CRON: '*/2 * * * * *',
      SCHEDULER_SEAL_CRON: '*/15 * * * * *',
      // One key for every process, as a deployment sets it: the api seals action secrets, the
      // action runner opens them (each process has a DATA_DIR of its own).
      SECRETS_KEY: randomBytes(32).toString('hex'),
      ...extraEnv,
    });
  }

  /** Starts one process per entry (in parallel) and waits until each is ready. */
  async startRoles(specs: { name: string; roles: string }[]): Promise<RoleProcess[]> {
    // The first process runs the migrations before the others start.
    const [first, ...rest] = specs;
    const one = await this.startRolesNow([first!]);
    return [...one, ...(await this.startRolesNow(rest))];
  }

  private async startRolesNow(specs: { name: string; roles: string }[]): Promise<RoleProcess[]> {
    return Promise.all(
      specs.map(async ({ name, roles }) => {
        const env: Record<string, string> = {
          ...this.baseEnv,
          ROLES: roles,
          PORT: String(await freePort()),
          INGEST_PORT: String(await freePort()),
          INGEST_PROCESS: 'inline',
          DATA_DIR: path.join(this.runDir, name),
        };
        fs.mkdirSync(env.DATA_DIR!, { recursive: true });
        const service = await startService(env, path.join(this.runDir, 'logs', `${name}.log`));
        const p = { name, roles, service, env };
        this.processes.push(p);
        return p;
      }),
    );
  }

  byName(name: string): RoleProcess {
    const p = this.processes.find((x) => x.name === name);
    if (!p) throw new Error(`no process ${name}`);
    return p;
  }

  /** The partitions of `traffic.requests` a processor process was last assigned (from its log). */
  assignment(name: string): number[] {
    const lines = fs
      .readFileSync(this.byName(name).service.logFile, 'utf8')
      .split('\n')
      .filter((l) => l.includes('"processor joined group"'));
    const last = lines.at(-1);
    if (!last) return [];
    const a = (JSON.parse(last) as { assignment?: Record<string, number[]> }).assignment ?? {};
    return a[TOPICS.requests] ?? [];
  }

  get brokers(): string[] {
    return this.stack.kafkaBrokers;
  }

  async createAccount(opts: { rateLimit?: number } = {}): Promise<FaultAccount> {
    const tag = randomBytes(6).toString('hex');
    const acct = await createAccount(this.pool, {
      name: `Scale ${tag}`,
      email: `scale-${tag}@example.test`,
      bucketName: `scale-${tag}`,
      plan: 'enterprise',
      rateLimit: opts.rateLimit ?? 1_000_000,
    });
    return { accountSid: acct.accountSid, apiToken: acct.apiToken, bucketSid: acct.bucketSid! };
  }

  /** Stops every process, then the stack; removes the data, keeps the logs. */
  async close(): Promise<void> {
    await Promise.allSettled(this.processes.map((p) => p.service.stop('SIGTERM')));
    await this.pool.end().catch(() => undefined);
    await this.stack.stop();
    if (!process.env.KEEP_SCALE_DATA) {
      for (const entry of fs.readdirSync(this.runDir)) {
        if (entry !== 'logs') fs.rmSync(path.join(this.runDir, entry), { recursive: true, force: true });
      }
    }
  }
}
