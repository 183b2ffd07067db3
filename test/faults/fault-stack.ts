import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { pino, type Logger } from 'pino';
import { startKafka, type KafkaHandle } from '../../infra/local/kafka.launcher.js';
import { startPostgres, type PostgresHandle } from '../../infra/local/postgres.launcher.js';
import { startLocalStack } from '../../infra/local/stack.js';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { parseConfig, type Config } from '../../services/shared/config.js';
import { freePort, ROOT, startService, type ServiceProcess } from '../helpers/service-process.js';

/** The roles that share chDB run together; ingest runs on its own (docs/scaling.md, "Running the roles as separate processes on one machine"). */
export const CORE_ROLES = 'processor,api,actions,scheduler';
export const FAULT_RUNS_DIR = path.join(ROOT, '.cache', 'fault-runs');

export interface FaultAccount {
  accountSid: string;
  apiToken: string;
  bucketSid: string;
}

/**
 * One fault case's world: a real Kafka broker and a real Postgres started by this test process
 * (so the test can kill and restart them), and the service as two child processes: `ingest`
 * alone and the chDB roles together. Everything lives under `.cache/fault-runs/<case>-<time>/`;
 * the data folders are removed at the end, the logs are kept (KEEP_FAULT_DATA=1 keeps all).
 */
export class FaultStack {
  core: ServiceProcess | undefined;
  ingest: ServiceProcess | undefined;
  private starts = 0;

  private constructor(
    readonly name: string,
    readonly runDir: string,
    readonly cfg: Config,
    readonly log: Logger,
    public kafka: KafkaHandle,
    public postgres: PostgresHandle,
    readonly databaseUrl: string,
    readonly brokers: string[],
    readonly pool: pg.Pool,
  ) {}

  static async start(name: string): Promise<FaultStack> {
    const runDir = path.join(FAULT_RUNS_DIR, `${name}-${Date.now()}-${process.pid}`);
    const dataDir = path.join(runDir, 'data');
    fs.mkdirSync(dataDir, { recursive: true, mode: 0o755 });
    // embedded Postgres runs as the `postgres` user when we are root: it must reach its folder.
    for (const d of [FAULT_RUNS_DIR, runDir, dataDir]) fs.chmodSync(d, 0o755);
    const ports = {
      PORT: await freePort(),
      INGEST_PORT: await freePort(),
      KAFKA_PORT: await freePort(),
      KAFKA_CONTROLLER_PORT: await freePort(),
      PG_PORT: await freePort(),
    };
    const cfg = parseConfig({
      ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
      DATA_DIR: dataDir,
      CACHE_DIR: path.join(ROOT, '.cache'),
    });
    const log = pino({ level: process.env.FAULT_STACK_LOG ?? 'warn' });
    const stack = await startLocalStack(cfg, log);
    const pool = new pg.Pool({ connectionString: stack.databaseUrl, max: 3 });
    // The test's own pool sees the Postgres restarts too: an idle client's error must not crash the worker.
    pool.on('error', () => undefined);
    return new FaultStack(
      name,
      runDir,
      cfg,
      log,
      stack.kafka!,
      stack.postgres!,
      stack.databaseUrl,
      stack.kafkaBrokers,
      pool,
    );
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${this.cfg.port}`;
  }

  get ingestUrl(): string {
    return `http://127.0.0.1:${this.cfg.ingestPort}`;
  }

  /** Environment shared by both service processes. */
  serviceEnv(extra: Record<string, string> = {}): Record<string, string> {
    return {
      PORT: String(this.cfg.port),
      INGEST_PORT: String(this.cfg.ingestPort),
      DATA_DIR: this.cfg.dataDir,
      KAFKA_BROKERS: this.brokers.join(','),
      DATABASE_URL: this.databaseUrl,
      PROCESSOR_FLUSH_MS: '100',
      PROCESSOR_HOLD_MS: '500',
      LOG_LEVEL: 'info',
      ...extra,
    };
  }

  private logFile(role: string): string {
    return path.join(this.runDir, 'logs', `${String(++this.starts).padStart(2, '0')}-${role}.log`);
  }

  /** Starts processor+api+actions+scheduler (one process: they share chDB) and waits for /readyz. */
  async startCore(extra: Record<string, string> = {}): Promise<ServiceProcess> {
    this.core = await startService(this.serviceEnv({ ROLES: CORE_ROLES, ...extra }), this.logFile('core'));
    return this.core;
  }

  /** Starts the ingest listener alone and waits for its "tapline ready" line. */
  async startIngest(extra: Record<string, string> = {}): Promise<ServiceProcess> {
    this.ingest = await startService(this.serviceEnv({ ROLES: 'ingest', ...extra }), this.logFile('ingest'));
    return this.ingest;
  }

  async createAccount(): Promise<FaultAccount> {
    const tag = randomBytes(6).toString('hex');
    const acct = await createAccount(this.pool, {
      name: `Fault ${tag}`,
      email: `fault-${tag}@example.test`,
      bucketName: `fault-${tag}`,
      plan: 'enterprise',
      rateLimit: 1_000_000,
    });
    return { accountSid: acct.accountSid, apiToken: acct.apiToken, bucketSid: acct.bucketSid! };
  }

  /** SIGKILLs the broker and waits until it is gone. */
  async killKafka(): Promise<void> {
    this.kafka.kill('SIGKILL');
    await this.kafka.exited;
  }

  /** Starts the broker again on the same ports and data directory (log recovery included). */
  async restartKafka(): Promise<void> {
    this.kafka = await startKafka({
      cacheDir: this.cfg.cacheDir,
      dataDir: path.join(this.cfg.dataDir, 'kafka'),
      port: this.cfg.kafka.port,
      controllerPort: this.cfg.kafka.controllerPort,
      heapMb: this.cfg.kafka.heapMb,
      log: this.log.child({ module: 'kafka-broker' }),
    });
  }

  /** Fast shutdown (SIGINT): clients are disconnected, data is flushed. */
  async stopPostgres(): Promise<void> {
    await this.postgres.stop();
  }

  async restartPostgres(): Promise<void> {
    this.postgres = await startPostgres({
      dataDir: path.join(this.cfg.dataDir, 'postgres'),
      port: this.cfg.postgres.port,
      database: 'tapline',
      log: this.log.child({ module: 'postgres-server' }),
    });
  }

  /** Stops the services, then the stack; removes the data, keeps the logs. */
  async close(): Promise<void> {
    await Promise.allSettled([this.ingest?.stop('SIGTERM'), this.core?.stop('SIGTERM')]);
    await this.pool.end().catch(() => undefined);
    await Promise.allSettled([this.kafka.stop(), this.postgres.stop()]);
    if (!process.env.KEEP_FAULT_DATA) fs.rmSync(this.cfg.dataDir, { recursive: true, force: true });
  }
}
