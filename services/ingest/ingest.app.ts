import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { registerSdkRoute } from '../api/sdk/sdk-bootstrap.js';
import type { Config } from '../shared/config.js';
import { AppError, forbidden, invalidToken, notFound, validation } from '../shared/errors.js';
import type { BucketDirectory, BucketInfo } from '../shared/bucket-directory.js';
import type { CredentialStore } from '../shared/credentials.js';
import { bearerToken } from '../shared/bearer.js';
import { createHttpServer } from '../shared/http-server.js';
import { countIngest, registerMetrics } from '../shared/metrics.js';
import { WindowLimiter } from '../shared/window-limiter.js';
import type { Logger } from '../shared/logger.js';
import { depthField, depthPhrase, tooDeepAt } from '../shared/json-depth.js';
import { errorDetails, validator } from '../shared/schemas.js';
import { registerOtlpRoute } from './otlp/otlp.route.js';
import { normalizeRecords, type Rejection } from './record.normalizer.js';
import type { RecordPublisher } from './record.publisher.js';
import { sdkCallToRecord } from './sdk-call.mapper.js';

/** Objects of a parsed body that held a prototype-poisoning key, or hold one that did. */
const POISONED = new WeakSet<object>();
/** Objects of a parsed body that held a prototype-poisoning key themselves. */
const POISONED_HERE = new WeakSet<object>();

/** Whether `value`, an item of a parsed body, held a prototype-poisoning key at any depth. */
export function isPoisoned(value: unknown): boolean {
  return typeof value === 'object' && value !== null && POISONED.has(value);
}

const forbiddenBody = () =>
  Object.assign(new Error('Object contains forbidden prototype property'), { statusCode: 400 });

/**
 * JSON.parse that never lets `__proto__` keys or `constructor.prototype` (prototype poisoning)
 * through: the key is dropped and the object that held it, with every object around it, is
 * marked (`isPoisoned`). Items of a record list (`{records: [...]}`) or of an array of SDK calls
 * are then rejected one by one by the handlers, so that one captured request carrying such a key
 * (a probe sent to the monitored API, say) costs its own record, not its batch; such a key
 * anywhere else refuses the body with a 400.
 */
export function parseJsonBody(text: string): unknown {
  if (!text.includes('__proto__') && !text.includes('constructor')) return JSON.parse(text);
  const root: unknown = JSON.parse(text, function (this: object, key, value: unknown) {
    if (
      key === '__proto__' ||
      (key === 'constructor' && value !== null && typeof value === 'object' && 'prototype' in value)
    ) {
      POISONED.add(this);
      POISONED_HERE.add(this);
      return undefined;
    }
    if (isPoisoned(value)) POISONED.add(this);
    return value;
  });
  if (!isPoisoned(root)) return root;
  if (Array.isArray(root)) return root;
  const body = root as Record<string, unknown>;
  const onlyInRecords =
    Array.isArray(body.records) &&
    !POISONED_HERE.has(body) &&
    Object.entries(body).every(([k, v]) => k === 'records' || !isPoisoned(v));
  if (!onlyInRecords) throw forbiddenBody();
  return root;
}

/** A record (or SDK call) that held a prototype-poisoning key: rejected alone. */
export function poisonedRejection(index: number): Rejection {
  return {
    index,
    error: {
      code: 'VALIDATION_ERROR',
      message: 'Record contains a forbidden key (__proto__, or constructor.prototype)',
      details: { '(body)': 'contains a forbidden key (__proto__, or constructor.prototype)' },
    },
  };
}

/** A record JSON cannot write (the publisher left it out): rejected alone, as invalid input. */
export function unserialisableRejection(index: number): Rejection {
  return {
    index,
    error: {
      code: 'VALIDATION_ERROR',
      message: 'Record cannot be serialised as JSON',
      details: { '(body)': 'cannot be serialised as JSON' },
    },
  };
}

export interface IngestDeps {
  cfg: Config;
  log: Logger;
  credentials: CredentialStore;
  buckets: BucketDirectory;
  publisher: RecordPublisher;
  /** read by the SDK bootstrap (`GET /v1/buckets/{b}/sdk`), which this listener serves too */
  pg: pg.Pool;
}

/**
 * The ingest listener (own port, INGEST_PORT). It validates and produces; it reads Postgres only
 * to authenticate and to resolve the bucket's owner.
 */
export function buildIngestApp(deps: IngestDeps): FastifyInstance {
  const { cfg, credentials, buckets, publisher } = deps;
  const app = createHttpServer({
    log: deps.log,
    bodyLimit: cfg.ingest.maxBytes,
    tls: cfg.tls,
    hstsMaxAge: cfg.hstsMaxAge,
    timeouts: {
      requestMs: cfg.limits.httpRequestTimeoutMs,
      connectionMs: cfg.limits.httpConnectionTimeoutMs,
    },
  });
  // Ingest bodies are large and many: Fastify's default parser scans every body with two
  // regular expressions for prototype poisoning. A plain substring test is as strict and cheaper:
  // only a body that contains one of the two words takes the checking path, which refuses it as
  // Fastify would (test/bench/hot-paths.ts times the parse; its figures are in bench/README.md).
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (err) {
      (err as Error & { statusCode?: number }).statusCode = 400;
      done(err as Error, undefined);
    }
  });

  const perToken = new WindowLimiter(cfg.limits.ingestPerToken);
  const perBucket = new WindowLimiter(cfg.limits.ingestPerBucket);

  async function authorize(req: FastifyRequest, bucketSid: string): Promise<BucketInfo> {
    const token = bearerToken(req);
    if (!token) throw invalidToken();
    const principal = await credentials.authenticate(token);
    if (!principal || principal.kind === 'mcpToken') throw invalidToken();
    if (!principal.scopes.has('requests:write')) throw forbidden('requests:write');
    const bucket = /^[A-Za-z0-9_]{1,64}$/.test(bucketSid) ? await buckets.get(bucketSid) : null;
    // Another account's bucket is indistinguishable from a missing one.
    if (!bucket || bucket.accountSid !== principal.accountSid) throw notFound('Bucket');
    // Calls per minute per token and per bucket (docs/security.md "Limits"), counted per process.
    perToken.check(principal.credentialSid, 'token');
    perBucket.check(bucket.sid, 'bucket');
    return bucket;
  }

  /**
   * `prior` are rejections found before normalising (the SDK wire format's own check) and
   * `indexOf` maps a position in `records` back to the array the client sent, so every
   * `rejected[].index` names the client's element.
   */
  async function accept(
    bucket: BucketInfo,
    records: unknown[],
    reply: FastifyReply,
    prior: Rejection[] = [],
    indexOf?: number[],
  ) {
    if (records.length > cfg.ingest.maxRecords) {
      countIngest(0, [], records.length, 'PAYLOAD_TOO_LARGE');
      throw new AppError(413, 'PAYLOAD_TOO_LARGE', `At most ${cfg.ingest.maxRecords} records per call`, {
        records: records.length,
        limit: cfg.ingest.maxRecords,
      });
    }
    const normalized = normalizeRecords(records, bucket.sid, new Date(), {
      retentionDays: cfg.clickhouse.retentionDays,
    });
    let accepted = normalized.accepted.length;
    const rejected = [...prior, ...normalized.rejected];
    if (accepted) {
      // Records are serialised again rather than cut out of the request body: the byte scan
      // over escaped bodies costs what serialising saves (bench/README.md).
      let unserialisable: number[];
      try {
        ({ unserialisable } = await publisher.publish(bucket.accountSid, bucket.sid, normalized.accepted));
      } catch (err) {
        countIngest(0, rejected, accepted, 'SERVICE_UNAVAILABLE');
        throw err;
      }
      for (const i of unserialisable) rejected.push(unserialisableRejection(normalized.acceptedIndex[i]!));
      accepted -= unserialisable.length;
      if (accepted && !bucket.appIsConnected) await buckets.markConnected(bucket);
    }
    if (indexOf) for (const r of rejected.slice(prior.length)) r.index = indexOf[r.index] ?? r.index;
    if (indexOf || rejected.length > normalized.rejected.length) rejected.sort((x, y) => x.index - y.index);
    countIngest(accepted, rejected);
    return reply.status(202).send({ accepted, rejected });
  }

  app.get('/healthz', async () => ({ status: 'ok' }));
  // GET /metrics (Prometheus) and the request latency histogram (docs/operations.md).
  registerMetrics(app, cfg, 'ingest');

  // OTLP/HTTP trace export: HTTP spans become request records (docs/opentelemetry.md).
  registerOtlpRoute(app, deps, { perToken, perBucket });

  // The SDK bootstrap, with the API's code: an SDK configured with the ingest URL and an ingest
  // token reads its settings here. Bearer tokens only (no cookies on this listener).
  registerSdkRoute(app, {
    pg: deps.pg,
    principalOf: async (req) => {
      const token = bearerToken(req);
      const principal = token ? await credentials.authenticate(token) : null;
      if (!principal || principal.kind === 'mcpToken') throw invalidToken();
      return principal;
    },
  });

  app.post<{ Params: { bucketSid: string }; Body: { records: unknown[] } }>(
    '/v1/buckets/:bucketSid/ingest',
    {
      schema: {
        params: { type: 'object', properties: { bucketSid: { type: 'string' } } },
        body: { $ref: 'ingestBody#' },
        response: { 202: { $ref: 'ingestResult#' } },
      },
      // Auth before the body is read, so an unauthenticated 5 MB upload is refused early.
      onRequest: async (req) => {
        (req as FastifyRequest & { bucket?: BucketInfo }).bucket = await authorize(
          req,
          (req.params as { bucketSid: string }).bucketSid,
        );
      },
    },
    async (req, reply) => {
      const bucket = (req as FastifyRequest & { bucket: BucketInfo }).bucket;
      const records = req.body.records;
      if (!records.some(isPoisoned)) return accept(bucket, records, reply);
      const kept: unknown[] = [];
      const indexOf: number[] = [];
      const prior: Rejection[] = [];
      records.forEach((r, i) => {
        if (isPoisoned(r)) prior.push(poisonedRejection(i));
        else {
          kept.push(r);
          indexOf.push(i);
        }
      });
      return accept(bucket, kept, reply, prior, indexOf);
    },
  );

  const validateSdkCall = validator('sdkCall');
  // Wire format of the existing SDKs: one captured call per POST to the root path.
  app.post(
    '/',
    {
      onRequest: async (req) => {
        const sid = req.headers['api-traffic-bucket-sid'];
        if (typeof sid !== 'string' || !sid) throw validation('Header Api-Traffic-Bucket-Sid is required');
        (req as FastifyRequest & { bucket?: BucketInfo }).bucket = await authorize(req, sid);
      },
    },
    async (req, reply) => {
      const bucket = (req as FastifyRequest & { bucket: BucketInfo }).bucket;
      const calls = Array.isArray(req.body) ? req.body : [req.body];
      const records: unknown[] = [];
      const indexOf: number[] = [];
      const rejected: Rejection[] = [];
      calls.forEach((call, index) => {
        const deep = tooDeepAt(call);
        if (isPoisoned(call)) rejected.push(poisonedRejection(index));
        else if (deep) {
          rejected.push({
            index,
            error: {
              code: 'VALIDATION_ERROR',
              message: `Call ${depthPhrase()}`,
              details: { [depthField(deep, '') || '(body)']: depthPhrase() },
            },
          });
        } else if (validateSdkCall(call)) {
          records.push(sdkCallToRecord(call as Record<string, unknown>));
          indexOf.push(index);
        } else
          rejected.push({
            index,
            error: {
              code: 'VALIDATION_ERROR',
              message: 'Call is invalid',
              details: errorDetails(validateSdkCall.errors),
            },
          });
      });
      // One call that is invalid is a 400; in an array, each invalid call is listed by its index.
      if (!Array.isArray(req.body) && rejected.length) {
        throw validation(rejected[0]!.error.message, rejected[0]!.error.details);
      }
      const sdk = req.headers['api-traffic-sdk'];
      const version = req.headers['api-traffic-sdk-version'];
      if (typeof sdk === 'string') {
        for (const r of records as Record<string, unknown>[]) {
          const tags = (r.tags as { key: string; value: string }[]) ?? [];
          tags.push({
            key: 'sdk',
            value: `${sdk}${typeof version === 'string' ? `/${version}` : ''}`.slice(0, 200),
          });
          r.tags = tags;
        }
      }
      const res = await accept(bucket, records, reply, rejected, indexOf);
      return res;
    },
  );
  return app;
}
