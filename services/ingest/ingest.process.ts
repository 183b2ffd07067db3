import { fork, type ChildProcess } from 'node:child_process';
import { childEnv } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';

export interface IngestProcess {
  ready(): boolean;
  stop(): Promise<void>;
}

/**
 * Runs the ingest role in a child process of its own when one process runs every role
 * (`npm start`). Ingest never touches chDB, so it can live apart, and the two processes use both
 * cores: JSON parsing and validation of incoming records no longer share a thread with the
 * processor's pipeline and ClickHouse inserts (bench/README.md). The child is the same entry
 * point with `ROLES=ingest`, pointed at the stack this process started; it is restarted if it dies,
 * and it stops by itself if this process goes away (IPC disconnect).
 */
export async function startIngestProcess(opts: {
  kafkaBrokers: string[];
  databaseUrl: string;
  log: Logger;
}): Promise<IngestProcess> {
  let child: ChildProcess | undefined;
  let isReady = false;
  let stopping = false;
  let restartMs = 500;

  const spawnOnce = () =>
    new Promise<void>((resolve, reject) => {
      const c = fork(process.argv[1]!, [], {
        execArgv: process.execArgv,
        env: childEnv({
          ROLES: 'ingest',
          KAFKA_BROKERS: opts.kafkaBrokers.join(','),
          DATABASE_URL: opts.databaseUrl,
          DEMO_ACCOUNT: 'false',
        }),
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      child = c;
      const timer = setTimeout(() => reject(new Error('ingest process not ready in 60 s')), 60_000);
      c.on('message', (m: unknown) => {
        if ((m as { type?: string } | null)?.type !== 'ready') return;
        clearTimeout(timer);
        isReady = true;
        restartMs = 500;
        resolve();
      });
      c.on('exit', (code, signal) => {
        clearTimeout(timer);
        isReady = false;
        if (stopping) return;
        reject(new Error(`ingest process exited (${code ?? signal}) before it was ready`));
        opts.log.error({ code, signal }, 'ingest process exited; restarting');
        setTimeout(() => {
          if (!stopping)
            spawnOnce().catch((err: Error) => opts.log.error({ err: err.message }, 'ingest restart failed'));
        }, restartMs).unref();
        restartMs = Math.min(restartMs * 2, 10_000);
      });
    });

  await spawnOnce();
  return {
    ready: () => isReady,
    stop: async () => {
      stopping = true;
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise<void>((r) => c.once('exit', () => r()));
      c.kill('SIGTERM');
      const timer = setTimeout(() => c.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
