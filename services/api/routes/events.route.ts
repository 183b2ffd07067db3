import type { FastifyInstance } from 'fastify';
import type { SchemaTypes } from '../api.types.js';
import { ref } from '../../../schemas/index.js';
import { accountParams } from '../../../schemas/common.schema.js';
import { eventListQuery } from '../../../schemas/events.schema.js';
import { validation } from '../../shared/errors.js';
import { EventsRepository } from '../events/events.repository.js';
import { requireScope } from '../plugins/auth.plugin.js';

const eventParams = {
  type: 'object',
  required: ['accountSid', 'eventSid'],
  properties: { accountSid: { type: 'string', maxLength: 64 }, eventSid: { type: 'string' } },
} as const;

/** Event markers (docs/events-mcp.md): chart annotations, scoped to buckets and environments. */
export default async function eventsRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  const repo = new EventsRepository(app.deps.pg);
  const tags = ['events'] as const;

  app.get(
    '/v1/accounts/:accountSid/events',
    {
      preHandler: requireScope('events:read'),
      schema: {
        tags,
        summary: 'List event markers, newest startedAt first',
        params: accountParams,
        querystring: eventListQuery,
        response: { 200: ref('eventList') },
      },
    },
    async (req) => {
      const q = req.query;
      const startTime = q.startTime ?? q.start_date;
      const endTime = q.endTime ?? q.end_date;
      if (startTime && endTime && Date.parse(startTime) > Date.parse(endTime)) {
        const from = q.startTime ? 'startTime' : 'start_date';
        const to = q.endTime ? 'endTime' : 'end_date';
        throw validation(`${from} is after ${to}`, { [`querystring.${from}`]: `must not be after ${to}` });
      }
      return repo.list(
        req.params.accountSid,
        {
          type: q.type,
          startTime,
          endTime,
          bucketSid: q.bucketSid,
          environmentSid: q.environmentSid,
          source: q.source,
        },
        q,
      );
    },
  );

  app.get(
    '/v1/accounts/:accountSid/events/:eventSid',
    {
      preHandler: requireScope('events:read'),
      schema: { tags, params: eventParams, response: { 200: ref('event') } },
    },
    async (req) => repo.get(req.params.accountSid, req.params.eventSid),
  );

  app.post(
    '/v1/accounts/:accountSid/events',
    {
      preHandler: requireScope('events:write'),
      schema: {
        tags,
        params: accountParams,
        body: ref('eventCreate'),
        response: { 201: ref('event') },
      },
    },
    async (req, reply) => reply.status(201).send(await repo.create(req.params.accountSid, req.body)),
  );

  app.put(
    '/v1/accounts/:accountSid/events/:eventSid',
    {
      preHandler: requireScope('events:write'),
      schema: {
        tags,
        summary: 'Update an event marker; only the provided fields change (e.g. close it with endedAt)',
        params: eventParams,
        body: ref('eventUpdate'),
        response: { 200: ref('event') },
      },
    },
    async (req) => repo.update(req.params.accountSid, req.params.eventSid, req.body),
  );

  app.delete(
    '/v1/accounts/:accountSid/events/:eventSid',
    {
      preHandler: requireScope('events:delete'),
      schema: { tags, params: eventParams, response: { 200: ref('deleted') } },
    },
    async (req) => {
      await repo.delete(req.params.accountSid, req.params.eventSid);
      return { sid: req.params.eventSid, deleted: true };
    },
  );
}
