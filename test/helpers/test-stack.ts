import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { startLocalStack, type LocalStack } from '../../infra/local/stack.js';
import { parseConfig } from '../../services/shared/config.js';
import { freePort, ROOT, startService, type ServiceProcess } from './service-process.js';
import type { startContainerStack } from './container-stack.js';
import { TEST_RETENTION_DAYS, testStackMode } from './stack-mode.js';
import { startSmtpSink } from './smtp-sink.js';

export interface TestStack {
  runDir: string;
  stack: LocalStack;
  service: ServiceProcess;
  smtp: Awaited<ReturnType<typeof startSmtpSink>>;
  mailDir: string;
  serviceLog: string;
  serviceEnv: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * A real stack for a test project: Kafka and Postgres started here (so a test may restart the
 * service without losing them), a test SMTP server, and the service as a child process with its
 * own chDB directory. Ports are asked from the OS, so a run never collides with `npm start` or
 * another run. `name` separates the data folders of several projects in one run.
 */
export async function startTestStack(
  name: string,
  extraEnv: Record<string, string> = {},
): Promise<TestStack> {
  const runDir = path.join(ROOT, '.cache', 'test-runs', `${Date.now()}-${process.pid}-${name}`);
  fs.mkdirSync(runDir, { recursive: true, mode: 0o755 });
  fs.chmodSync(runDir, 0o755);
  const ports = {
    PORT: await freePort(),
    INGEST_PORT: await freePort(),
    KAFKA_PORT: await freePort(),
    KAFKA_CONTROLLER_PORT: await freePort(),
    PG_PORT: await freePort(),
  };
  const cfg = parseConfig({
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
    DATA_DIR: runDir,
    CACHE_DIR: path.join(ROOT, '.cache'),
  });
  const log = pino({ level: process.env.TEST_STACK_LOG ?? 'warn' });
  const stack =
    testStackMode().mode === 'containers' ? await startContainers() : await startLocalStack(cfg, log);
  const mailDir = path.join(runDir, 'mail');
  const smtp = await startSmtpSink(mailDir);
  const serviceEnv: Record<string, string> = {
    PORT: String(ports.PORT),
    INGEST_PORT: String(ports.INGEST_PORT),
    DATA_DIR: runDir,
    KAFKA_BROKERS: stack.kafkaBrokers.join(','),
    DATABASE_URL: stack.databaseUrl,
    ...(stack.clickhouseUrl ? { CLICKHOUSE_URL: stack.clickhouseUrl } : {}),
    OUTBOUND_ALLOW: '127.0.0.1,localhost,::1',
    PROCESSOR_FLUSH_MS: '100',
    PROCESSOR_HOLD_MS: '500',
    RETENTION_DAYS: String(TEST_RETENTION_DAYS),
    // Workflow tests: a real SMTP server, quick backoff/timeouts, threshold evaluation every 2 s.
    SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
    ACTION_BACKOFF_MS: '200',
    ACTION_TIMEOUT_MS: '2000',
    SCHEDULER_THRESHOLD_CRON: '*/2 * * * * *',
    // The consumer rollup's seal every 15 s: the consumers' answers read sealed day blocks, and the
    // job adds little to the scheduler's runs beside the threshold jobs' every 2 s.
    SCHEDULER_SEAL_CRON: '*/15 * * * * *',
    // GET /metrics on the API and ingest listeners (test/integration/self-metrics.test.ts).
    METRICS_TOKEN: randomBytes(24).toString('hex'),
    ...extraEnv,
  };
  const serviceLog = path.join(runDir, 'service.log');
  const service = await startService(serviceEnv, serviceLog);
  const keep = Boolean(process.env.KEEP_TEST_DATA);
  return {
    runDir,
    stack,
    service,
    smtp,
    mailDir,
    serviceLog,
    serviceEnv,
    stop: async () => {
      await service.stop('SIGTERM');
      await smtp.close();
      await stack.stop();
      if (!keep) fs.rmSync(runDir, { recursive: true, force: true });
    },
  };
}

/** Loads testcontainers only when a Docker engine is in use: the local path never needs it. */
async function startContainers(): ReturnType<typeof startContainerStack> {
  const { startContainerStack } = await import('./container-stack.js');
  return startContainerStack();
}
