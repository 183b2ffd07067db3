import type { FastifyInstance } from 'fastify';
import type { SchemaTypes } from '../api.types.js';
import { ref } from '../../../schemas/index.js';
import { bearerToken } from '../../shared/bearer.js';
import { AppError, validation } from '../../shared/errors.js';
import type { BucketsRepository } from '../buckets/buckets.repository.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { SESSION_COOKIE } from '../auth/sessions.service.js';
import type { RequestsRepository } from '../requests/requests.repository.js';
import type { CriteriaResolver } from './requests.route.js';

/** How often a live connection asks ClickHouse for rows stored since its cursor. */
export const LIVE_POLL_MS = 500;
/** A comment line this often keeps proxies and the browser from closing an idle stream. */
export const LIVE_PING_MS = 15_000;
/** Concurrent live connections per account (each polls ClickHouse). */
export const LIVE_MAX_PER_ACCOUNT = 20;
/** Most rows one poll sends; more wait for the next poll. */
const LIVE_BATCH = 500;

/** `<storedAt ISO>|<sid>`: where a stream resumes (the SSE `id:` of each event, Last-Event-ID). */
function parseCursor(v: string | undefined): { storedAt: string; sid: string } | undefined {
  if (!v) return undefined;
  const [storedAt = '', sid = ''] = v.split('|');
  if (!Number.isFinite(Date.parse(storedAt))) return undefined;
  return { storedAt: new Date(storedAt).toISOString(), sid };
}

/**
 * Live tail of a bucket's stored requests as server-sent events (docs/search.md, "Live tail"),
 * registered by the requests routes beside the list. It reads what the processor stored (already
 * redacted, exclusions already applied) through the list's repository; it never reads the Kafka
 * stream.
 */
export function liveTailRoutes(
  fastify: FastifyInstance,
  repo: RequestsRepository,
  buckets: BucketsRepository,
  opts: { criteria?: CriteriaResolver },
): void {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const open = new Map<string, number>();
  const closing = new Set<() => void>();
  app.addHook('onClose', async () => {
    for (const stop of [...closing]) stop();
  });

  app.get(
    '/v1/accounts/:accountSid/buckets/:bucketSid/requests/live',
    {
      preHandler: requireScope('requests:read'),
      schema: {
        tags: ['requests'],
        summary: 'Live tail of stored requests (server-sent events)',
        description:
          "text/event-stream: `event: request` with one record per `data:` line (the list endpoint's item), `id:` a resume cursor (send it back as Last-Event-ID or `since`), `: ping` every 15 s.",
        params: {
          type: 'object',
          required: ['accountSid', 'bucketSid'],
          properties: { accountSid: { type: 'string' }, bucketSid: { type: 'string' } },
        },
        querystring: {
          type: 'object',
          properties: {
            q: { type: 'string', maxLength: 4096 },
            view: { type: 'string', maxLength: 64 },
            since: { type: 'string', maxLength: 128 },
          },
        },
        response: {
          200: {
            description: 'An event stream (text/event-stream) of stored request records',
            // One server-sent event, as OpenAPI before 3.2 describes an event stream: the schema
            // is an event's fields, and `data` carries one request record as JSON.
            content: {
              'text/event-stream': {
                schema: {
                  type: 'object',
                  required: ['event', 'data'],
                  properties: {
                    event: { type: 'string', enum: ['request'] },
                    data: {
                      type: 'string',
                      description: 'One request record as JSON, the list endpoint item shape',
                    },
                    id: {
                      type: 'string',
                      description: 'Resume cursor: send it back as Last-Event-ID or since',
                    },
                    retry: { type: 'integer', description: 'Reconnect delay in ms' },
                  },
                },
              },
            },
          },
        },
      } as const,
    },
    async (req, reply) => {
      const { accountSid, bucketSid } = req.params;
      await buckets.get(accountSid, bucketSid);
      const criteria =
        (req.query.q || req.query.view) && opts.criteria
          ? await opts.criteria(accountSid, bucketSid, req.query)
          : undefined;
      const lastId = req.headers['last-event-id'];
      const given = typeof lastId === 'string' && lastId ? lastId : req.query.since;
      let cursor = parseCursor(given);
      if (given && !cursor)
        throw validation('since is not a cursor of this stream', { 'querystring.since': given });
      // The check and the count are one synchronous step: a slot is taken before anything is
      // awaited, so streams opened at the same moment cannot all pass the check.
      if ((open.get(accountSid) ?? 0) >= LIVE_MAX_PER_ACCOUNT)
        throw new AppError(
          429,
          'RATE_LIMIT_EXCEEDED',
          `At most ${LIVE_MAX_PER_ACCOUNT} live streams per account`,
        );
      open.set(accountSid, (open.get(accountSid) ?? 0) + 1);
      const release = () => open.set(accountSid, (open.get(accountSid) ?? 1) - 1);
      try {
        cursor ??= { storedAt: await repo.storeNow(), sid: '' };
      } catch (err) {
        release();
        throw err;
      }

      const serialize = reply.compileSerializationSchema(ref('requestRecord'));
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        'x-accel-buffering': 'no',
        connection: 'keep-alive',
      });
      res.write(`retry: 2000\n: live tail of ${bucketSid}\n\n`);

      let stopped = false;
      let timer: NodeJS.Timeout | undefined;
      const ping = setInterval(() => res.write(': ping\n\n'), LIVE_PING_MS);
      const stop = () => {
        if (stopped) return;
        stopped = true;
        clearTimeout(timer);
        clearInterval(ping);
        closing.delete(stop);
        release();
        res.end();
      };
      closing.add(stop);
      req.raw.on('close', stop);
      res.on('error', stop);

      // The credential that opened the stream is checked again before every poll (a cache look-up;
      // revocations reach the cache at once), so a deleted token, an ended session, a changed
      // password or a removed scope ends the stream as it refuses the next ordinary request.
      const credential = bearerToken(req) ?? req.cookies[SESSION_COOKIE] ?? '';
      const stillAllowed = async (): Promise<boolean> => {
        const p = await app.deps.credentials.authenticate(credential).catch(() => null);
        return !!p && p.kind !== 'mcpToken' && p.accountSid === accountSid && p.scopes.has('requests:read');
      };

      const poll = async () => {
        if (stopped) return;
        if (!(await stillAllowed())) {
          if (stopped) return;
          res.write(
            `event: error\ndata: ${JSON.stringify({ code: 'INVALID_TOKEN', message: 'The credential of this stream was revoked or no longer allows reading requests; the stream ends' })}\n\n`,
          );
          stop();
          return;
        }
        try {
          const { records, cursors } = await repo.listStoredAfter(
            accountSid,
            bucketSid,
            cursor!,
            criteria,
            LIVE_BATCH,
          );
          for (let i = 0; i < records.length && !stopped; i++) {
            const c = cursors[i]!;
            res.write(`id: ${c.storedAt}|${c.sid}\nevent: request\ndata: ${serialize(records[i]!)}\n\n`);
            cursor = c;
          }
        } catch (err) {
          req.log.warn({ err: (err as Error).message }, 'live tail poll failed');
          res.write(
            `event: error\ndata: ${JSON.stringify({ message: 'Reading stored requests failed; retrying' })}\n\n`,
          );
        }
        if (!stopped) timer = setTimeout(() => void poll(), LIVE_POLL_MS);
      };
      void poll();
    },
  );
}
