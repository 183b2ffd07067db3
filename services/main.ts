import type { FastifyInstance } from 'fastify';
import type { Producer } from 'kafkajs';
import { startLocalStack, type LocalStack } from '../infra/local/stack.js';
import { buildApp } from './api/app.js';
import { createAccount } from './api/accounts/accounts.service.js';
import { buildIngestApp } from './ingest/ingest.app.js';
import { ActionsConsumer } from './actions/actions.consumer.js';
import { RecordPublisher } from './ingest/record.publisher.js';
import { startIngestProcess, type IngestProcess } from './ingest/ingest.process.js';
import { startProcessor } from './processor/processor.consumer.js';
import { Scheduler } from './scheduler/scheduler.service.js';
import { BucketDirectory } from './shared/bucket-directory.js';
import {
  createClickHouse,
  migrateClickHouse,
  queryLimits,
  withQuerySettings,
  type ClickHouseClient,
} from './shared/clickhouse.js';
import { ensureClickHouseDatabase } from './shared/clickhouse-database.js';
import { config, ConfigError, type Config } from './shared/config.js';
import { CredentialStore, parseAuthNotice } from './shared/credentials.js';
import { createKafka, ensureTopics, Partitioners } from './shared/kafka.js';
import { randomAlnum } from './shared/ids.js';
import { logger, rootLogger, routeProcessWarnings } from './shared/logger.js';
import { PgListener } from './shared/pg-listener.js';
import { createPool, migratePostgres, type Pool } from './shared/postgres.js';
import { startMetricsListener, watchClickHouseMemory, watchConsumerLag } from './shared/metrics.js';
import { CONSUMER_GROUPS, TOPICS } from './shared/topics.js';

/**
 * One entry point for every role (ROLES, default all). Start order: stack, stores, migrations,
 * topics, roles. Stop order (docs/architecture.md, convention 9): stop intake, stop consuming (flush + commit),
 * close clients, stop the stack.
 */
async function main(cfg: Config): Promise<void> {
  const log = logger('main');
  routeProcessWarnings(logger('process'));
  const t0 = Date.now();
  const stack: LocalStack = await startLocalStack(cfg, rootLogger());
  const closers: { name: string; close: () => Promise<unknown> }[] = [];
  let shuttingDown = false;

  const shutdown = async (signal: string, code = 0) => {
    if (shuttingDown) return;
    shuttingDown = true;
    log.info({ signal }, 'shutting down');
    for (const c of closers.reverse()) {
      try {
        await c.close();
      } catch (err) {
        log.warn({ err: (err as Error).message, step: c.name }, 'shutdown step failed');
      }
    }
    await stack.stop();
    log.info('stopped');
    process.exit(code);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  try {
    const pool: Pool = createPool(stack.databaseUrl, cfg.postgres.poolSize, logger('postgres'));
    closers.push({ name: 'postgres pool', close: () => pool.end() });
    await migratePostgres(stack.databaseUrl, logger('migrations'));

    const needsClickHouse = ['processor', 'api', 'scheduler'].some((r) => cfg.roles.has(r as never));
    let ch: ClickHouseClient | undefined;
    if (needsClickHouse) {
      const chCfg = { ...cfg.clickhouse, url: stack.clickhouseUrl };
      await ensureClickHouseDatabase(chCfg);
      ch = createClickHouse(chCfg);
      closers.push({ name: 'clickhouse', close: () => ch!.close() });
      // Serialised across processes by a Postgres advisory lock (several roles may start at once).
      await migrateClickHouse(ch, chCfg, logger('migrations'), pool);
      if (!chCfg.url) {
        const client = ch;
        const stop = watchClickHouseMemory(
          async (query) =>
            (await client.query({ query, format: 'JSONEachRow' })).json<{ metric: string; value: string }>(),
          logger('metrics'),
        );
        closers.push({ name: 'clickhouse memory', close: async () => void stop() });
      }
    }

    const kafka = createKafka(stack.kafkaBrokers, 'tapline', rootLogger());
    await ensureTopics(
      kafka,
      [
        { topic: TOPICS.requests, numPartitions: cfg.kafka.requestsPartitions },
        { topic: TOPICS.requestsDlq, numPartitions: 1 },
        { topic: TOPICS.actions, numPartitions: cfg.kafka.partitions },
        { topic: TOPICS.actionsDlq, numPartitions: 1 },
      ],
      logger('kafka'),
    );
    const producer: Producer = kafka.producer({
      allowAutoTopicCreation: false,
      retry: { retries: 2 },
      // Murmur2 partitioning, as the Java client: a bucket's records land where any client puts them.
      createPartitioner: Partitioners.DefaultPartitioner,
    });
    await producer.connect();
    closers.push({ name: 'kafka producer', close: () => producer.disconnect() });

    const credentials = new CredentialStore(
      pool,
      logger('auth'),
      30_000,
      cfg.sessionTtlDays * 86_400_000,
      cfg.limits.authLookupsPerSecond,
    );
    credentials.start();
    closers.push({ name: 'credentials', close: () => credentials.stop() });
    const buckets = new BucketDirectory(pool);
    const listener = new PgListener(stack.databaseUrl, logger('pg-listener'));
    listener.on('tapline_auth', (payload) => {
      const notice = parseAuthNotice(payload);
      if ('credential' in notice) credentials.invalidate(notice.credential);
      else if ('bucketSid' in notice) buckets.invalidate(notice.bucketSid);
      else {
        credentials.invalidate();
        buckets.invalidate();
      }
    });
    listener.onReconnect(() => {
      credentials.invalidate();
      buckets.invalidate();
    });
    await listener.start();
    closers.push({ name: 'pg listener', close: () => listener.stop() });

    // Ingest in a child process when this process runs other roles too (ingest.process.ts).
    const separateIngest = cfg.roles.has('ingest') && cfg.roles.size > 1 && cfg.ingest.process === 'separate';
    let ingestChild: IngestProcess | undefined;

    if (cfg.roles.has('api')) {
      const api: FastifyInstance = await buildApp({
        cfg,
        log: logger('api'),
        pg: pool,
        ch: withQuerySettings(ch!, queryLimits(cfg.limits).api),
        credentials,
        producer,
        ready: async () => ({
          postgres: await pool.query('SELECT 1').then(
            () => true,
            () => false,
          ),
          clickhouse: await ch!.query({ query: 'SELECT 1', format: 'JSONEachRow' }).then(
            async (r) => (await r.json(), true),
            () => false,
          ),
          ...(separateIngest ? { ingest: ingestChild?.ready() ?? false } : {}),
        }),
      });
      await api.listen({ port: cfg.port, host: cfg.host });
      closers.push({ name: 'api server', close: () => api.close() });
    }

    if (cfg.roles.has('processor')) {
      // The processor's own connections (its rule reloads, and on a ClickHouse server the lock its
      // inserts hold): a rule change applies within seconds however many of the shared pool's
      // connections the API and the scheduler's jobs hold while they wait on ClickHouse.
      const processorPool = createPool(stack.databaseUrl, 4, logger('postgres'));
      closers.push({ name: 'processor postgres pool', close: () => processorPool.end() });
      const processor = await startProcessor({
        cfg,
        pool: processorPool,
        listener,
        kafka,
        producer,
        ch: ch!,
      });
      closers.push({ name: 'processor', close: () => processor.stop() });
    }

    if (cfg.roles.has('actions')) {
      const actions = new ActionsConsumer({ kafka, producer, pg: pool, cfg, log: logger('actions') });
      await actions.start();
      closers.push({ name: 'action runner', close: () => actions.stop() });
    }

    if (cfg.roles.has('scheduler')) {
      const scheduler = new Scheduler({
        pg: pool,
        ch: withQuerySettings(ch!, queryLimits(cfg.limits).scheduler),
        producer,
        listener,
        cfg,
        log: logger('scheduler'),
      });
      await scheduler.start();
      closers.push({ name: 'scheduler', close: () => scheduler.stop() });
    }

    if (separateIngest) {
      ingestChild = await startIngestProcess({
        kafkaBrokers: stack.kafkaBrokers,
        databaseUrl: stack.databaseUrl,
        processes: cfg.ingest.processes,
        log: logger('ingest-process'),
      });
      closers.push({ name: 'ingest process', close: () => ingestChild!.stop() });
    } else if (cfg.roles.has('ingest')) {
      // Ingest's own producer never resends: a request that outlived ingest's deadline (answered
      // 503) must not be written later by a retry, or the client's retry would store it twice.
      const ingestProducer: Producer = kafka.producer({
        allowAutoTopicCreation: false,
        retry: { retries: 0 },
        createPartitioner: Partitioners.DefaultPartitioner,
      });
      await ingestProducer.connect();
      closers.push({ name: 'ingest producer', close: () => ingestProducer.disconnect() });
      const publisher = new RecordPublisher(
        ingestProducer,
        { lingerMs: cfg.ingest.lingerMs, timeoutMs: cfg.ingest.produceTimeoutMs },
        logger('publisher'),
      );
      const ingest = buildIngestApp({
        cfg,
        log: logger('ingest'),
        credentials,
        buckets,
        publisher,
        pg: pool,
      });
      await ingest.listen({ port: cfg.ingestPort, host: cfg.host });
      // Closing the listener first stops intake; draining sends what was accepted.
      closers.push({ name: 'ingest publisher', close: () => publisher.drain() });
      closers.push({ name: 'ingest server', close: () => ingest.close() });
    }

    // Prometheus metrics (docs/operations.md): the lag of the consumer groups this process runs,
    // and a listener of its own in a process with neither the API nor an ingest listener.
    const lagGroups = [
      ...(cfg.roles.has('processor') ? [{ groupId: CONSUMER_GROUPS.processor, topic: TOPICS.requests }] : []),
      ...(cfg.roles.has('actions') ? [{ groupId: CONSUMER_GROUPS.actions, topic: TOPICS.actions }] : []),
    ];
    if (lagGroups.length) {
      const stopLag = watchConsumerLag(kafka, lagGroups, logger('metrics'));
      closers.push({ name: 'consumer lag', close: stopLag });
    }
    const ownIngestListener = cfg.roles.has('ingest') && !separateIngest;
    if (!cfg.roles.has('api') && !ownIngestListener && cfg.metrics.port > 0) {
      const metricsServer = await startMetricsListener(cfg, logger('metrics'));
      if (metricsServer) {
        closers.push({
          name: 'metrics listener',
          close: () => new Promise<void>((resolve) => metricsServer.close(() => resolve())),
        });
      }
    }

    const demo = cfg.demoAccount ? await ensureDemoAccount(pool, cfg) : undefined;
    log.info(
      {
        ms: Date.now() - t0,
        roles: [...cfg.roles],
        api: cfg.roles.has('api') ? `${cfg.tls ? 'https' : 'http'}://${cfg.host}:${cfg.port}` : undefined,
        ingest: cfg.roles.has('ingest')
          ? `${cfg.tls ? 'https' : 'http'}://${cfg.host}:${cfg.ingestPort}`
          : undefined,
      },
      'tapline ready',
    );
    // The dashboard's lines come last: after the log stream (a worker thread when pretty) has
    // written what came before them.
    // A process without the API that made the demo account still says how to sign in (once).
    if (cfg.roles.has('api') || demo)
      rootLogger().flush(() => setTimeout(() => printDashboard(cfg, demo), 200));
    // As the ingest child of a process running the other roles: report readiness, and stop when
    // the parent goes away (its IPC channel closes even if it was SIGKILLed).
    if (process.send) {
      process.send({ type: 'ready' });
      process.once('disconnect', () => void shutdown('parent-exit'));
    }
  } catch (err) {
    log.fatal({ err }, 'start failed');
    await shutdown('start-failure', 1);
  }
}

/**
 * On a fresh database: one demo account, its credentials and a one-time dashboard password
 * printed once to stdout (never logged). Returns the password when it was just made.
 */
async function ensureDemoAccount(
  pool: Pool,
  cfg: Config,
): Promise<{ email: string; password: string } | undefined> {
  // Several role processes may start on one fresh database at once: an advisory lock lets exactly
  // one of them find it empty and make the account.
  const lock = await pool.connect();
  let made: { demo: Awaited<ReturnType<typeof createAccount>>; email: string; password: string } | undefined;
  try {
    await lock.query('SELECT pg_advisory_lock(7207002)');
    const r = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM accounts');
    if ((r.rows[0]?.n ?? 0) > 0) return undefined;
    const email = 'demo@tapline.local';
    const password = randomAlnum(16);
    made = {
      demo: await createAccount(pool, { name: 'Demo', email, bucketName: 'demo', password }),
      email,
      password,
    };
  } finally {
    await lock.query('SELECT pg_advisory_unlock(7207002)').catch(() => undefined);
    lock.release();
  }
  const { demo, email, password } = made;
  const apiUrl = cfg.publicUrl ?? `${cfg.tls ? 'https' : 'http'}://${cfg.host}:${cfg.port}`;
  process.stdout.write(
    `\nTapline demo account (shown once; store these values):\n${JSON.stringify(
      { ...demo, apiUrl, ingestUrl: `${cfg.tls ? 'https' : 'http'}://${cfg.host}:${cfg.ingestPort}` },
      null,
      2,
    )}\n\nFor the README's examples, paste into a shell:\n  export ACCOUNT=${demo.accountSid} BUCKET=${demo.bucketSid ?? ''} TOKEN=${demo.apiToken}\n\n`,
  );
  return { email, password };
}

/** The last lines of a start: where the dashboard is and, on a fresh database, how to sign in. */
function printDashboard(cfg: Config, demo: { email: string; password: string } | undefined): void {
  const host = cfg.host === '0.0.0.0' || cfg.host === '::' ? 'localhost' : cfg.host;
  const url = (cfg.publicUrl ?? `${cfg.tls ? 'https' : 'http'}://${host}:${cfg.port}`).replace(/\/?$/, '/');
  const lines = cfg.roles.has('api')
    ? ['', 'Tapline is ready.', `Dashboard:  ${url}`]
    : [
        '',
        `Tapline is ready (roles: ${[...cfg.roles].join(', ')}). The dashboard is served by the api role.`,
      ];
  if (demo)
    lines.push(
      `Sign in as  ${demo.email}  with password  ${demo.password}`,
      `            (shown once; change it with npm run admin -- set-password --email ${demo.email})`,
    );
  process.stdout.write(lines.join('\n') + '\n\n');
}

let cfg: Config;
try {
  cfg = config();
} catch (err) {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  }
  throw err;
}
void main(cfg);
