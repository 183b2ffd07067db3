import type { FastifyInstance } from 'fastify';
import type { SchemaTypes } from '../api.types.js';
import { ref } from '../../../schemas/index.js';
import type { RequestRecord } from '../../../schemas/request-record.schema.js';
import { listQuery, timeCursorSchema } from '../../../schemas/common.schema.js';
import { validation } from '../../shared/errors.js';
import { parseTimeCursor } from '../tables/pagination.js';
import { requireScope } from '../plugins/auth.plugin.js';
import { BucketsRepository } from '../buckets/buckets.repository.js';
import { REQUEST_SORTS, RequestsRepository, type RequestFilters } from '../requests/requests.repository.js';
import { liveTailRoutes } from './requests-live.route.js';

const params = {
  type: 'object',
  required: ['accountSid', 'bucketSid'],
  properties: { accountSid: { type: 'string' }, bucketSid: { type: 'string' } },
} as const;
const oneParams = {
  type: 'object',
  required: ['accountSid', 'bucketSid', 'requestSid'],
  properties: {
    accountSid: { type: 'string' },
    bucketSid: { type: 'string' },
    requestSid: { type: 'string' },
  },
} as const;

const base = listQuery(REQUEST_SORTS, 'createdAt');
const dateParam = { type: 'string', format: 'date-time' } as const;
export const requestListQuery = {
  ...base,
  properties: {
    ...base.properties,
    startDate: dateParam,
    endDate: dateParam,
    start_date: dateParam,
    end_date: dateParam,
    method: { type: 'string', pattern: '^[A-Za-z-]{1,32}$' },
    statusCode: { type: 'integer', minimum: 100, maximum: 599 },
    path: { type: 'string', minLength: 1, maxLength: 2048 },
    q: { type: 'string', maxLength: 4096 },
    view: { type: 'string', maxLength: 64 },
    cursor: timeCursorSchema,
  },
} as const;

/**
 * NOTE: the repository answers stored records as the JSON the processor wrote (untyped: a record
 * carries whatever fields its client sent within the ingest schema); they are the reply schema's
 * records by construction, which this assertion states.
 */
const asRecord = (r: Record<string, unknown>) => r as RequestRecord;

/** Hook for `q=` and `view=` (stream-view criteria): returns compiled SQL or throws 400. */
export type CriteriaResolver = (
  accountSid: string,
  bucketSid: string,
  q: { q?: string; view?: string },
) => Promise<RequestFilters['criteria']>;

export default async function requestsRoutes(
  fastify: FastifyInstance,
  opts: { criteria?: CriteriaResolver },
): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const repo = new RequestsRepository(app.deps.ch, app.deps.pg);
  const buckets = new BucketsRepository(app.deps.pg);

  app.get(
    '/v1/accounts/:accountSid/buckets/:bucketSid/requests',
    {
      preHandler: requireScope('requests:read'),
      schema: {
        tags: ['requests'],
        params,
        querystring: requestListQuery,
        response: {
          200: {
            type: 'object',
            required: ['hasMore', 'records'],
            properties: {
              hasMore: { type: 'boolean' },
              records: { type: 'array', items: ref('requestRecord') },
              nextCursor: {
                type: 'string',
                description:
                  'With sort=createdAt and more records: pass it as `cursor` for the next page (docs/search.md). Absent on the last page, so the list keeps the `{hasMore, records}` shape of every list.',
              },
            },
          },
        },
      } as const,
    },
    async (req) => {
      const { accountSid, bucketSid } = req.params;
      await buckets.get(accountSid, bucketSid);
      const q = req.query;
      const startDate = q.startDate ?? q.start_date;
      const endDate = q.endDate ?? q.end_date;
      if (startDate && endDate && Date.parse(startDate) > Date.parse(endDate)) {
        throw validation('startDate is after endDate', { startDate: 'must not be after endDate' });
      }
      let criteria: RequestFilters['criteria'];
      if ((q.q || q.view) && opts.criteria) criteria = await opts.criteria(accountSid, bucketSid, q);
      else if (q.q || q.view) throw validation('Search criteria are not supported', { q: 'unsupported' });
      const cursor = q.cursor === undefined ? undefined : parseTimeCursor(q.cursor);
      const page = await repo.list(
        accountSid,
        bucketSid,
        { ...q, cursor },
        {
          startDate,
          endDate,
          method: q.method,
          statusCode: q.statusCode,
          path: q.path,
          criteria,
        },
      );
      const records = page.records.map(asRecord);
      return page.nextCursor === null
        ? { hasMore: page.hasMore, records }
        : { hasMore: page.hasMore, records, nextCursor: page.nextCursor };
    },
  );

  app.get(
    '/v1/accounts/:accountSid/buckets/:bucketSid/requests/:requestSid',
    {
      preHandler: requireScope('requests:read'),
      schema: { tags: ['requests'], params: oneParams, response: { 200: ref('requestRecord') } } as const,
    },
    async (req) =>
      asRecord(await repo.get(req.params.accountSid, req.params.bucketSid, req.params.requestSid)),
  );

  app.put(
    '/v1/accounts/:accountSid/buckets/:bucketSid/requests/:requestSid',
    {
      preHandler: requireScope('requests:write'),
      schema: {
        tags: ['requests'],
        params: oneParams,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: { note: { type: ['string', 'null'], maxLength: 10000 } },
        },
        response: { 200: ref('requestRecord') },
      } as const,
    },
    async (req) =>
      asRecord(
        await repo.setNote(
          req.params.accountSid,
          req.params.bucketSid,
          req.params.requestSid,
          req.body.note ?? null,
        ),
      ),
  );

  app.delete(
    '/v1/accounts/:accountSid/buckets/:bucketSid/requests/:requestSid',
    {
      preHandler: requireScope('requests:delete'),
      schema: { tags: ['requests'], params: oneParams, response: { 200: ref('deleted') } } as const,
    },
    async (req) => {
      await repo.delete(req.params.accountSid, req.params.bucketSid, req.params.requestSid);
      return { sid: req.params.requestSid, deleted: true };
    },
  );

  liveTailRoutes(fastify, repo, buckets, opts);
}
