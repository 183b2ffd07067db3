import { timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kafka } from 'kafkajs';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { bearerToken } from './bearer.js';
import type { Config } from './config.js';
import { AppError, errorBody, invalidToken } from './errors.js';
import type { Logger } from './logger.js';

/**
 * Tapline's own Prometheus metrics (docs/operations.md lists them, docs/processing.md the
 * processor's). One registry per process: each process (the main one, every ingest worker, every
 * role process) answers for itself at `GET /metrics`. Hot paths count per block or per call, not
 * per record, so the cost per record stays a few additions.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

/** What reads the consumer lag at each scrape (watchConsumerLag), before the gauge is read. */
const lagCollectors = new Set<() => Promise<void>>();
/** What reads the embedded engine's memory at each scrape (watchClickHouseMemory). */
const chMemoryCollectors = new Set<() => Promise<void>>();

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const metrics = {
  ingestRecords: new Counter({
    name: 'tapline_ingest_records_total',
    help: 'Records received by the ingest listener: accepted (in Kafka) or rejected, by reason (error code)',
    labelNames: ['outcome', 'reason'] as const,
    registers: [registry],
  }),
  httpDuration: new Histogram({
    name: 'tapline_http_request_duration_seconds',
    help: 'HTTP request latency per listener (api, ingest), route template, method and status code',
    labelNames: ['listener', 'method', 'route', 'status_code'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  }),
  kafkaPublish: new Histogram({
    name: 'tapline_kafka_publish_duration_seconds',
    help: 'Time from a Kafka send to its acknowledgement (acks=all), by topic and outcome',
    labelNames: ['topic', 'outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  }),
  consumerLag: new Gauge({
    name: 'tapline_kafka_consumer_lag',
    help: 'Messages of a partition not yet committed by the consumer group (end offset - committed offset), read at each scrape',
    labelNames: ['group', 'topic', 'partition'] as const,
    registers: [registry],
    async collect() {
      await Promise.all([...lagCollectors].map((c) => c()));
    },
  }),
  authLookups: new Counter({
    name: 'tapline_auth_lookups_total',
    help: 'Credential values looked up in Postgres (not answered from the cache), by result: found, unknown, or limited (refused with a 429 by AUTH_LOOKUPS_PER_SECOND)',
    labelNames: ['result'] as const,
    registers: [registry],
  }),
  processorRecords: new Counter({
    name: 'tapline_processor_records_total',
    help: 'Records the processor finished with, by outcome: stored, dropped (see tapline_processor_dropped_records_total), dead_lettered',
    labelNames: ['outcome'] as const,
    registers: [registry],
  }),
  processorDropped: new Counter({
    name: 'tapline_processor_dropped_records_total',
    help: 'Records the processor dropped without storing them, by reason: excluded (an exclusion rule), repeat (a sid stored recently)',
    labelNames: ['reason'] as const,
    registers: [registry],
  }),
  processorBlocks: new Counter({
    name: 'tapline_processor_blocks_total',
    help: 'Blocks the processor stored (one ClickHouse insert each), by what flushed them: size, time or hold',
    labelNames: ['trigger'] as const,
    registers: [registry],
  }),
  processorBlockRecords: new Histogram({
    name: 'tapline_processor_block_records',
    help: 'Rows per stored block (one ClickHouse insert)',
    buckets: [1, 10, 100, 500, 1000, 2500, 5000, 10000, 20000, 50000],
    registers: [registry],
  }),
  processorStepSeconds: new Counter({
    name: 'tapline_processor_step_seconds_total',
    help: 'Time the processor spent in each step (exclusions, redaction, endpoint, triggers, ...)',
    labelNames: ['step'] as const,
    registers: [registry],
  }),
  clickhouseInsert: new Histogram({
    name: 'tapline_clickhouse_insert_duration_seconds',
    help: 'ClickHouse insert latency by table and outcome',
    labelNames: ['table', 'outcome'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  }),
  clickhouseInsertFailures: new Counter({
    name: 'tapline_clickhouse_insert_failures_total',
    help: 'Failed ClickHouse inserts by table and kind: data (refused rows, isolated into dead letters) or other (retried)',
    labelNames: ['table', 'kind'] as const,
    registers: [registry],
  }),
  actionExecutions: new Counter({
    name: 'tapline_action_executions_total',
    help: 'Workflow actions finished, by channel (action type) and outcome (succeeded, failed)',
    labelNames: ['channel', 'outcome'] as const,
    registers: [registry],
  }),
  clickhouseMemory: new Gauge({
    name: 'tapline_clickhouse_memory_bytes',
    help: "Memory of the embedded ClickHouse engine (chDB, in this process's RSS), read at each scrape from system.metrics: tracked (all it accounts for), merges (background merges and mutations), mark_cache, primary_index_cache, query_condition_cache",
    labelNames: ['kind'] as const,
    registers: [registry],
    async collect() {
      await Promise.all([...chMemoryCollectors].map((c) => c()));
    },
  }),
  schedulerRuns: new Counter({
    name: 'tapline_scheduler_runs_total',
    help: 'Scheduler job runs by job (threshold evaluation, schedule) and outcome (ran, failed, elsewhere: another replica ran it)',
    labelNames: ['job', 'outcome'] as const,
    registers: [registry],
  }),
};

/**
 * One ingest call's records: `accepted` in Kafka, `rejected` one by one (reason: their error
 * code), and `refused` more refused as a whole for `reason` (too many records, Kafka unavailable).
 */
export function countIngest(
  accepted: number,
  rejected: readonly { error: { code: string } }[],
  refused = 0,
  reason = '',
): void {
  if (accepted) metrics.ingestRecords.inc({ outcome: 'accepted', reason: '' }, accepted);
  for (const r of rejected) metrics.ingestRecords.inc({ outcome: 'rejected', reason: r.error.code });
  if (refused) metrics.ingestRecords.inc({ outcome: 'rejected', reason }, refused);
}

/** Seconds since `start` (a `process.hrtime.bigint()` value). */
export const secondsSince = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e9;

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

function tokenMatches(given: string | null, expected: string): boolean {
  if (given === null) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Whether a scrape may read the metrics: with METRICS_TOKEN, a request bearing it; without, a
 * client on the loopback address (`loopbackOnly`) or anyone who reaches the metrics listener.
 * Throws the envelope's 401 / 403 otherwise.
 */
function checkScrape(
  cfg: Config,
  token: string | null,
  remote: string | undefined,
  loopbackOnly: boolean,
): void {
  const expected = cfg.metrics.token;
  if (expected !== undefined) {
    if (!tokenMatches(token, expected))
      throw invalidToken('GET /metrics needs the bearer token METRICS_TOKEN');
    return;
  }
  if (loopbackOnly && !LOOPBACK.has(remote ?? ''))
    throw new AppError(
      403,
      'FORBIDDEN',
      'GET /metrics answers loopback clients only on this listener unless METRICS_TOKEN is set',
    );
}

/**
 * `GET /metrics` on a Fastify listener, and the request latency histogram of all its routes
 * (`listener`: api or ingest). Route labels are the route templates, so their number is bounded.
 */
export function registerMetrics(app: FastifyInstance, cfg: Config, listener: 'api' | 'ingest'): void {
  app.addHook('onResponse', async (req: FastifyRequest, reply: FastifyReply) => {
    metrics.httpDuration.observe(
      {
        listener,
        method: req.method,
        route: req.routeOptions.url ?? 'unmatched',
        status_code: String(reply.statusCode),
      },
      reply.elapsedTime / 1000,
    );
  });
  app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
    checkScrape(cfg, bearerToken(req), req.socket.remoteAddress, true);
    const text = await registry.metrics();
    return reply.header('content-type', registry.contentType).header('cache-control', 'no-store').send(text);
  });
}

/**
 * The metrics listener of a process without an API or ingest listener (a processor, actions or
 * scheduler role process): `GET /metrics` on METRICS_HOST:METRICS_PORT, nothing else.
 */
export async function startMetricsListener(cfg: Config, log: Logger): Promise<http.Server | null> {
  const server = http.createServer((req, res) => {
    const send = (status: number, body: string, type: string) => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    const url = (req.url ?? '/').split('?')[0];
    if (url !== '/metrics') {
      send(
        404,
        JSON.stringify(
          errorBody('RESOURCE_NOT_FOUND', `${url} not found: this listener serves GET /metrics`),
        ),
        'application/json',
      );
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(
        405,
        JSON.stringify(errorBody('METHOD_NOT_ALLOWED', `${req.method} is not allowed on /metrics`)),
        'application/json',
      );
      return;
    }
    const auth = req.headers.authorization;
    const token = auth?.startsWith('Bearer ') ? auth.slice(7).trim() : null;
    try {
      checkScrape(cfg, token, req.socket.remoteAddress, false);
    } catch (err) {
      const e = err as AppError;
      send(e.status, JSON.stringify(errorBody(e.code, e.message, e.details)), 'application/json');
      return;
    }
    registry.metrics().then(
      (text) => send(200, text, registry.contentType),
      (err: unknown) => {
        log.error({ err: (err as Error).message }, 'metrics collection failed');
        send(500, JSON.stringify(errorBody('INTERNAL_ERROR', 'Internal server error')), 'application/json');
      },
    );
  });
  // A port already taken (several role processes on one machine sharing the default) costs the
  // process its metrics, never its work: it starts without the listener and says so.
  const listening = await new Promise<boolean>((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EADDRINUSE') return reject(err);
      log.warn(
        { host: cfg.metrics.host, port: cfg.metrics.port },
        'metrics listener not started: the port is in use (give each process its own METRICS_PORT)',
      );
      resolve(false);
    };
    server.once('error', failed);
    server.listen(cfg.metrics.port, cfg.metrics.host, () => {
      server.off('error', failed);
      resolve(true);
    });
  });
  if (!listening) return null;
  log.info({ host: cfg.metrics.host, port: cfg.metrics.port }, 'metrics listener ready');
  return server;
}

/** Longest a scrape waits for a collector's read (Kafka's offsets, the engine's memory). */
const SCRAPE_WAIT_MS = 2000;

/**
 * Runs a collector's read for a scrape, waiting at most SCRAPE_WAIT_MS: a read still running then
 * leaves the gauge as it was (it finishes later), and a failed one is logged at debug, so a scrape
 * always answers.
 */
async function withinScrape(read: () => Promise<void>, log: Logger, failed: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      read(),
      new Promise((resolve) => {
        timer = setTimeout(resolve, SCRAPE_WAIT_MS);
      }),
    ]);
  } catch (err) {
    log.debug({ err: (err as Error).message }, failed);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Fills `tapline_kafka_consumer_lag` at each scrape from Kafka itself (each partition's end
 * offset minus the group's committed offset), so a consumer that stopped fetching shows its lag
 * growing. Returns what closes the admin client.
 */
export function watchConsumerLag(
  kafka: Kafka,
  groups: readonly { groupId: string; topic: string }[],
  log: Logger,
): () => Promise<void> {
  const admin = kafka.admin();
  let connected: Promise<void> | undefined;
  const read = async () => {
    connected ??= admin.connect().catch((err: unknown) => {
      connected = undefined;
      throw err;
    });
    await connected;
    for (const { groupId, topic } of groups) {
      const ends = await admin.fetchTopicOffsets(topic);
      const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
      const at = new Map(committed?.partitions.map((p) => [p.partition, Number(p.offset)]));
      for (const p of ends) {
        const end = Number(p.high);
        const done = at.get(p.partition) ?? -1;
        // -1: the group has committed nothing yet on this partition, so all of it is waiting.
        const lag = done < 0 ? end - Number(p.low) : end - done;
        metrics.consumerLag.set({ group: groupId, topic, partition: String(p.partition) }, Math.max(0, lag));
      }
    }
  };
  const collect = () => withinScrape(read, log, 'consumer lag not read');
  lagCollectors.add(collect);
  return async () => {
    lagCollectors.delete(collect);
    if (connected) await admin.disconnect().catch(() => undefined);
  };
}

/** system.metrics names of the engine's memory, by the gauge's `kind`. */
const CH_MEMORY_METRICS: Record<string, string> = {
  MemoryTracking: 'tracked',
  MergesMutationsMemoryTracking: 'merges',
  MarkCacheBytes: 'mark_cache',
  PrimaryIndexCacheBytes: 'primary_index_cache',
  QueryConditionCacheBytes: 'query_condition_cache',
};

/**
 * Reads the embedded engine's memory into tapline_clickhouse_memory_bytes at each scrape, so the
 * part of the process's RSS that is chDB's shows apart from Node's heap and buffers. Only in
 * embedded mode: a ClickHouse server reports its own memory. A scrape waits at most 2 s (the
 * engine runs one call at a time; an insert in progress comes first).
 */
export function watchClickHouseMemory(
  read: (query: string) => Promise<{ metric: string; value: number | string }[]>,
  log: Logger,
): () => void {
  const names = Object.keys(CH_MEMORY_METRICS);
  const query = `SELECT metric, value FROM system.metrics WHERE metric IN (${names.map((n) => `'${n}'`).join(', ')})`;
  const collect = () =>
    withinScrape(
      async () => {
        for (const r of await read(query)) {
          const kind = CH_MEMORY_METRICS[r.metric];
          if (kind) metrics.clickhouseMemory.set({ kind }, Number(r.value));
        }
      },
      log,
      'clickhouse memory not read',
    );
  chMemoryCollectors.add(collect);
  return () => chMemoryCollectors.delete(collect);
}
