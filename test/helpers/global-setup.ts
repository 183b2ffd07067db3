import fs from 'node:fs';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { pino } from 'pino';
import { startLocalStack, type LocalStack } from '../../infra/local/stack.js';
import { parseConfig } from '../../services/shared/config.js';
import { freePort, ROOT, startService, type ServiceProcess } from './service-process.js';
import { startSmtpSink } from './smtp-sink.js';

export interface TestEnv {
  apiUrl: string;
  ingestUrl: string;
  databaseUrl: string;
  kafkaBrokers: string[];
  dataDir: string;
  serviceLog: string;
  serviceEnv: Record<string, string>;
  /** folder where the test SMTP server (smtp-sink.ts) stores each mail the service sends */
  mailDir: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    env: TestEnv;
  }
}

let stack: LocalStack | undefined;
let service: ServiceProcess | undefined;
let smtp: Awaited<ReturnType<typeof startSmtpSink>> | undefined;
let runDirToRemove: string | undefined;

/**
 * One real stack for the whole run: Kafka and Postgres started here (so a test may restart the
 * service without losing them), the service as a child process with its own chDB directory.
 * Ports are asked from the OS, so a run never collides with `npm start` or another run.
 */
export async function setup(project: TestProject): Promise<void> {
  const runDir = path.join(ROOT, '.cache', 'test-runs', `${Date.now()}-${process.pid}`);
  fs.mkdirSync(runDir, { recursive: true, mode: 0o755 });
  fs.chmodSync(runDir, 0o755);
  runDirToRemove = process.env.KEEP_TEST_DATA ? undefined : runDir;
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
  stack = await startLocalStack(cfg, log);
  const mailDir = path.join(runDir, 'mail');
  smtp = await startSmtpSink(mailDir);
  const serviceEnv: Record<string, string> = {
    PORT: String(ports.PORT),
    INGEST_PORT: String(ports.INGEST_PORT),
    DATA_DIR: runDir,
    KAFKA_BROKERS: stack.kafkaBrokers.join(','),
    DATABASE_URL: stack.databaseUrl,
    OUTBOUND_ALLOW: '127.0.0.1,localhost,::1',
    PROCESSOR_FLUSH_MS: '100',
    // Workflow tests: a real SMTP server, quick backoff/timeouts, threshold evaluation every 2 s.
    SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
    ACTION_BACKOFF_MS: '200',
    ACTION_TIMEOUT_MS: '2000',
    SCHEDULER_THRESHOLD_CRON: '*/2 * * * * *',
  };
  const serviceLog = path.join(runDir, 'service.log');
  service = await startService(serviceEnv, serviceLog);
  project.provide('env', {
    apiUrl: service.apiUrl,
    ingestUrl: service.ingestUrl,
    databaseUrl: stack.databaseUrl,
    kafkaBrokers: stack.kafkaBrokers,
    dataDir: runDir,
    serviceLog,
    serviceEnv,
    mailDir,
  });
}

export async function teardown(): Promise<void> {
  await service?.stop('SIGTERM');
  await smtp?.close();
  await stack?.stop();
  if (runDirToRemove) fs.rmSync(runDirToRemove, { recursive: true, force: true });
}
