import cluster, { type Worker } from 'node:cluster';
import { childEnv } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';

export interface IngestProcess {
  /** every ingest worker is up */
  ready(): boolean;
  stop(): Promise<void>;
}

/**
 * Runs the ingest role in worker processes of its own when one process runs every role
 * (`npm start`). Ingest never touches chDB, so it can live apart: JSON parsing and validation of
 * incoming records run beside the processor's pipeline and ClickHouse inserts, on other cores,
 * and with INGEST_PROCESSES > 1 several workers share the listening port (Node's cluster module:
 * this process accepts connections and hands them round-robin to the workers; a keep-alive
 * connection stays with its worker). A single Node process tops out at one core of HTTP + JSON +
 * Kafka produce work. NOTE: on the 2-core machine 2 workers measured worse than 1 (they take the
 * processor's CPU; bench/README.md), so the default is 1; more suit more cores.
 * Each worker is the same entry point with `ROLES=ingest`, pointed at the stack this process
 * started; a worker that dies is restarted, and workers stop by themselves if this process goes
 * away (IPC disconnect).
 */
export async function startIngestProcess(opts: {
  kafkaBrokers: string[];
  databaseUrl: string;
  processes: number;
  log: Logger;
}): Promise<IngestProcess> {
  const workers = new Map<number, { worker: Worker; ready: boolean }>();
  let stopping = false;
  let restartMs = 500;

  cluster.setupPrimary({
    exec: process.argv[1]!,
    args: [],
    execArgv: process.execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });

  const spawnOnce = (slot: number) =>
    new Promise<void>((resolve, reject) => {
      const w = cluster.fork(
        childEnv({
          ROLES: 'ingest',
          KAFKA_BROKERS: opts.kafkaBrokers.join(','),
          DATABASE_URL: opts.databaseUrl,
          DEMO_ACCOUNT: 'false',
        }),
      );
      const entry = { worker: w, ready: false };
      workers.set(slot, entry);
      const timer = setTimeout(() => reject(new Error('ingest process not ready in 60 s')), 60_000);
      w.on('message', (m: unknown) => {
        if ((m as { type?: string } | null)?.type !== 'ready') return;
        clearTimeout(timer);
        entry.ready = true;
        restartMs = 500;
        resolve();
      });
      w.on('exit', (code, signal) => {
        clearTimeout(timer);
        entry.ready = false;
        if (stopping) return;
        reject(new Error(`ingest process exited (${code ?? signal}) before it was ready`));
        opts.log.error({ code, signal, slot }, 'ingest process exited; restarting');
        setTimeout(() => {
          if (!stopping)
            spawnOnce(slot).catch((err: Error) =>
              opts.log.error({ err: err.message }, 'ingest restart failed'),
            );
        }, restartMs).unref();
        restartMs = Math.min(restartMs * 2, 10_000);
      });
    });

  await Promise.all(Array.from({ length: opts.processes }, (_, slot) => spawnOnce(slot)));
  return {
    ready: () => [...workers.values()].every((e) => e.ready),
    stop: async () => {
      stopping = true;
      await Promise.all(
        [...workers.values()].map(async ({ worker }) => {
          const p = worker.process;
          if (p.exitCode !== null || p.signalCode !== null) return;
          const exited = new Promise<void>((r) => p.once('exit', () => r()));
          p.kill('SIGTERM');
          const timer = setTimeout(() => p.kill('SIGKILL'), 20_000);
          await exited;
          clearTimeout(timer);
        }),
      );
    },
  };
}
