import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { bearerToken } from '../../shared/bearer.js';
import type { BucketInfo } from '../../shared/bucket-directory.js';
import type { Principal } from '../../shared/credentials.js';
import { AppError, forbidden, invalidToken, notFound } from '../../shared/errors.js';
import { toErrorResponse } from '../../shared/http-errors.js';
import type { WindowLimiter } from '../../shared/window-limiter.js';
import type { IngestDeps } from '../ingest.app.js';
import { normalizeRecords } from '../record.normalizer.js';
import {
  CONTENT_TYPE,
  decodeExportRequest,
  encodeExportResponse,
  encodeStatus,
  type OtlpEncoding,
} from './otlp.codec.js';
import { BUCKET_ATTRIBUTE, countSpans, mapExport } from './span.mapper.js';

/** The header that names the bucket of every resource without a `tapline.bucket` attribute. */
export const BUCKET_HEADER = 'x-tapline-bucket';

/**
 * Spans per export = this × INGEST_MAX_RECORDS (10,000 by default), beside the body limit: an
 * OpenTelemetry Collector batch holds up to 8192 spans by default.
 */
export const SPANS_PER_RECORD_LIMIT = 10;

const BUCKET_SID = /^[A-Za-z0-9_]{1,64}$/;

type OtlpRequest = FastifyRequest & { principal?: Principal; headerBucket?: BucketInfo };

function encodingOf(req: FastifyRequest): OtlpEncoding | null {
  const type = String(req.headers['content-type'] ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
  if (type === CONTENT_TYPE.protobuf) return 'protobuf';
  if (type === CONTENT_TYPE.json) return 'json';
  return null;
}

/**
 * `POST /v1/traces`: OTLP/HTTP trace export (docs/opentelemetry.md). HTTP server and client spans
 * become request records and take the batch ingest's path from there: the same record schema and
 * normaliser, the same publisher (Kafka, acks=all), so a 200 means the records are durable.
 */
export function registerOtlpRoute(
  app: FastifyInstance,
  deps: IngestDeps,
  limits?: { perToken: WindowLimiter; perBucket: WindowLimiter },
): void {
  const { cfg, credentials, buckets, publisher } = deps;
  const maxSpans = SPANS_PER_RECORD_LIMIT * cfg.ingest.maxRecords;

  /** The caller's bucket `sid`, or null when it is missing or another account's (never told apart). */
  async function bucketOf(principal: Principal, sid: string): Promise<BucketInfo | null> {
    const bucket = BUCKET_SID.test(sid) ? await buckets.get(sid) : null;
    return bucket && bucket.accountSid === principal.accountSid ? bucket : null;
  }

  // An encapsulated scope: its body parser hands the raw bytes to the route and its error handler
  // answers protobuf requests in their encoding; the rest of the listener keeps its own.
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

    // The OTLP/HTTP specification answers errors with a `google.rpc.Status` in the request's
    // encoding. Protobuf requests get one (gRPC code and the envelope's `CODE: message`); JSON
    // requests and anything else get the service's JSON error envelope (the parent handler).
    scope.setErrorHandler((err, req, reply) => {
      const res = toErrorResponse(err);
      // The parent handler reads the rest of a too-large upload before answering (http-errors.ts).
      if (encodingOf(req) !== 'protobuf' || res.status === 413) throw err;
      if (res.status >= 500) req.log.error({ err }, 'request failed');
      if (res.status === 503) void reply.header('Retry-After', '5');
      // 429s of the per-minute limiters carry their wait in the details (window-limiter.ts).
      const retryAfter = (res.details as { retryAfter?: unknown }).retryAfter;
      if (res.status === 429 && typeof retryAfter === 'number')
        void reply.header('Retry-After', String(retryAfter));
      return reply
        .status(res.status)
        .type(CONTENT_TYPE.protobuf)
        .send(encodeStatus(res.status, `${res.code}: ${res.message}`));
    });

    scope.post(
      '/v1/traces',
      {
        bodyLimit: cfg.ingest.maxBytes,
        // Auth before the body is read, so an unauthenticated upload is refused early.
        onRequest: async (req: OtlpRequest) => {
          const token = bearerToken(req);
          if (!token) throw invalidToken();
          const principal = await credentials.authenticate(token);
          if (!principal || principal.kind === 'mcpToken') throw invalidToken();
          if (!principal.scopes.has('requests:write')) throw forbidden('requests:write');
          req.principal = principal;
          const named = req.headers[BUCKET_HEADER];
          if (typeof named === 'string' && named !== '') {
            const bucket = await bucketOf(principal, named);
            if (!bucket) throw notFound('Bucket');
            req.headerBucket = bucket;
          }
          // The batch ingest's calls per minute per token and per header bucket (docs/security.md
          // "Limits"): an export counts as one call.
          limits?.perToken.check(principal.credentialSid, 'token');
          if (req.headerBucket) limits?.perBucket.check(req.headerBucket.sid, 'bucket');
        },
      },
      async (req: OtlpRequest, reply: FastifyReply) => {
        const encoding = encodingOf(req);
        if (encoding === null) {
          throw new AppError(
            415,
            'UNSUPPORTED_MEDIA_TYPE',
            'Content-Type must be application/x-protobuf or application/json',
          );
        }
        const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const exported = decodeExportRequest(body, encoding);
        const spans = countSpans(exported);
        if (spans > maxSpans) {
          throw new AppError(413, 'PAYLOAD_TOO_LARGE', `At most ${maxSpans} spans per export`, {
            spans,
            limit: maxSpans,
          });
        }
        const headerBucket = req.headerBucket ?? null;
        const mapped = mapExport(exported, headerBucket?.sid ?? null);
        if (mapped.noBucket > 0 && mapped.byBucket.size === 0) {
          throw new AppError(
            400,
            'VALIDATION_ERROR',
            `Name the bucket with the X-Tapline-Bucket header or the ${BUCKET_ATTRIBUTE} resource attribute`,
            { bucket: 'is required' },
          );
        }

        let rejected = mapped.notHttp + mapped.noBucket;
        const reasons: string[] = [];
        if (mapped.notHttp)
          reasons.push(`${mapped.notHttp} spans are not HTTP server or client spans (skipped)`);
        if (mapped.noBucket)
          reasons.push(`${mapped.noBucket} HTTP spans belong to resources that name no bucket`);
        const now = new Date();
        const publishes: Promise<void>[] = [];
        for (const [sid, records] of mapped.byBucket) {
          const bucket = sid === headerBucket?.sid ? headerBucket : await bucketOf(req.principal!, sid);
          if (!bucket) {
            rejected += records.length;
            reasons.push(
              `${records.length} spans name bucket ${JSON.stringify(sid.slice(0, 64))}, which is not found`,
            );
            continue;
          }
          const normalized = normalizeRecords(records, bucket.sid, now, {
            retentionDays: cfg.clickhouse.retentionDays,
          });
          if (normalized.rejected.length) {
            rejected += normalized.rejected.length;
            const first = normalized.rejected[0]!.error;
            reasons.push(
              `${normalized.rejected.length} spans are not valid request records (first: ${first.message}` +
                `${Object.keys(first.details).length ? ` ${JSON.stringify(first.details)}` : ''})`,
            );
          }
          if (normalized.accepted.length) {
            publishes.push(
              publisher
                .publish(bucket.accountSid, bucket.sid, normalized.accepted)
                .then(async ({ unserialisable }) => {
                  if (unserialisable.length) {
                    rejected += unserialisable.length;
                    reasons.push(`${unserialisable.length} spans cannot be serialised as JSON`);
                  }
                  if (unserialisable.length < normalized.accepted.length && !bucket.appIsConnected)
                    await buckets.markConnected(bucket);
                }),
            );
          }
        }
        // NOTE: every bucket's records are produced before answering; one failed produce fails the
        // export (503, the exporter retries), even when another bucket's records were stored.
        await Promise.all(publishes);
        const partial =
          rejected > 0 ? { rejectedSpans: rejected, errorMessage: reasons.join('; ') } : undefined;
        return reply.status(200).type(CONTENT_TYPE[encoding]).send(encodeExportResponse(encoding, partial));
      },
    );
  });
}
