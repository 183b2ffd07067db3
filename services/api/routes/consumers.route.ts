import type { FastifyInstance } from 'fastify';
import { accountParams, sidParams } from '../../../schemas/common.schema.js';
import { consumerGetQuery, consumerListQuery } from '../../../schemas/consumers.schema.js';
import { ref } from '../../../schemas/index.js';
import type { SchemaTypes } from '../api.types.js';
import {
  compileIdentification,
  identifyWithSource,
  sourceValueRedacted,
} from '../../processor/consumer-identification.js';
import { forbidden, notFound } from '../../shared/errors.js';
import { createAjv } from '../../shared/schemas.js';
import { secretBox } from '../../shared/secret-box.js';
import { BucketsRepository } from '../buckets/buckets.repository.js';
import { ConsumersRepository } from '../consumers/consumers.repository.js';
import { RequestsRepository } from '../requests/requests.repository.js';
import { resolveRange } from '../metrics/metrics-range.js';
import { requireScope } from '../plugins/auth.plugin.js';

const bucketParams = sidParams('accountSid', 'bucketSid');
const consumerParams = {
  type: 'object',
  required: ['accountSid', 'consumerId'],
  properties: {
    accountSid: { type: 'string', maxLength: 64 },
    consumerId: { type: 'string', minLength: 1, maxLength: 256 },
  },
} as const;

/**
 * API consumers (docs/consumers.md): a bucket's identification rules (the bucket's read and write
 * scopes) and their preview against a stored request, the consumers list and one consumer (`metrics:read`), and a consumer's name and group
 * (`buckets:write`).
 */
export default async function consumersRoutes(fastify: FastifyInstance): Promise<void> {
  const app = fastify.withTypeProvider<SchemaTypes>();
  // Identification sources are a `oneOf` picked by `type` (a discriminator), so a bad source is
  // refused with what is wrong in its own type (a header name with a space, an unknown type), not
  // every other type's mismatch. Bodies are not type-coerced; params and query strings are.
  const bodyAjv = createAjv({ discriminator: true });
  const partAjv = createAjv({ coerceTypes: 'array', discriminator: true });
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? bodyAjv : partAjv;
    const id = (schema as { $id?: unknown }).$id;
    return (typeof id === 'string' ? ajv.getSchema(id) : undefined) ?? ajv.compile(schema as object);
  });
  const repo = new ConsumersRepository(app.deps.ch, app.deps.pg, app.deps.cfg.clickhouse.retentionDays);
  const buckets = new BucketsRepository(app.deps.pg);
  const requests = new RequestsRepository(app.deps.ch, app.deps.pg);
  const tags = ['consumers'] as const;
  const identification = '/v1/accounts/:accountSid/buckets/:bucketSid/consumerIdentification';
  const base = '/v1/accounts/:accountSid/consumers';

  app.get(
    identification,
    {
      preHandler: requireScope('buckets:read'),
      schema: {
        tags,
        summary: "The bucket's consumer identification sources, in the order they are tried",
        params: bucketParams,
        response: { 200: ref('consumerIdentification') },
      },
    },
    async (req) => {
      const { accountSid, bucketSid } = req.params;
      await buckets.get(accountSid, bucketSid);
      return repo.getIdentification(accountSid, bucketSid);
    },
  );

  app.put(
    identification,
    {
      preHandler: requireScope('buckets:write'),
      schema: {
        tags,
        summary:
          "Replace the bucket's consumer identification sources (an empty list turns identification off)",
        params: bucketParams,
        body: ref('consumerIdentificationUpdate'),
        response: { 200: ref('consumerIdentification') },
      },
    },
    async (req) => {
      const { accountSid, bucketSid } = req.params;
      await buckets.get(accountSid, bucketSid);
      return repo.putIdentification(accountSid, bucketSid, req.body.sources);
    },
  );

  const consumerKey = secretBox(app.deps.cfg).derive('consumer-id');
  app.post(
    `${identification}/preview`,
    {
      preHandler: requireScope('buckets:read'),
      schema: {
        tags,
        summary:
          'Which consumer draft identification sources give one stored request of the bucket (nothing is stored)',
        params: bucketParams,
        body: ref('consumerIdentificationPreviewBody'),
        response: { 200: ref('consumerIdentificationPreview') },
      },
    },
    async (req) => {
      const { accountSid, bucketSid } = req.params;
      // The sample is a stored request: reading it takes requests:read, as the request itself does.
      if (!req.principal.scopes.has('requests:read')) throw forbidden('requests:read');
      await buckets.get(accountSid, bucketSid);
      const record = await requests.get(accountSid, bucketSid, req.body.requestSid);
      // The processor's own code: the sources compiled as the rule snapshot compiles them, with the
      // processor's key, so a credential's id here is the id its calls are stored under.
      const compiled = compileIdentification(req.body.sources, consumerKey, accountSid);
      const request = record.request as Record<string, unknown>;
      const found = compiled ? identifyWithSource(compiled, request) : undefined;
      const stored = record.consumer as { id: string; name?: string | null; group?: string | null } | null;
      return {
        requestSid: req.body.requestSid,
        consumer: found ? found.consumer : null,
        source: found ? found.source : null,
        redacted: found ? sourceValueRedacted(req.body.sources[found.source]!, request) : false,
        storedConsumer: stored?.id
          ? {
              id: stored.id,
              ...(stored.name ? { name: stored.name } : {}),
              ...(stored.group ? { group: stored.group } : {}),
            }
          : null,
      };
    },
  );

  app.get(
    base,
    {
      preHandler: requireScope('metrics:read'),
      schema: {
        tags,
        summary: 'Consumers with traffic in the range, with their counts and percentiles',
        params: accountParams,
        querystring: consumerListQuery,
        response: { 200: ref('consumerList') },
      },
    },
    async (req) => {
      const { accountSid } = req.params;
      const q = req.query;
      if (q.bucketSid !== undefined) await buckets.get(accountSid, q.bucketSid);
      const range = resolveRange(q, Date.now());
      return repo.list({ accountSid, bucketSid: q.bucketSid, environmentSid: q.environmentSid, range }, q);
    },
  );

  app.get(
    `${base}/:consumerId`,
    {
      preHandler: requireScope('metrics:read'),
      schema: {
        tags,
        summary: 'One consumer over the range, with the endpoints it called',
        params: consumerParams,
        querystring: consumerGetQuery,
        response: { 200: ref('consumerDetail') },
      },
    },
    async (req) => {
      const { accountSid, consumerId } = req.params;
      const q = req.query;
      if (q.bucketSid !== undefined) await buckets.get(accountSid, q.bucketSid);
      const range = resolveRange(q, Date.now());
      const found = await repo.get(
        { accountSid, bucketSid: q.bucketSid, environmentSid: q.environmentSid, range },
        consumerId,
      );
      if (!found) throw notFound('Consumer');
      return found;
    },
  );

  app.put(
    `${base}/:consumerId`,
    {
      preHandler: requireScope('buckets:write'),
      schema: {
        tags,
        summary: "Set a consumer's name and/or group (null clears the value set here)",
        params: consumerParams,
        body: ref('consumerUpdate'),
        response: { 200: ref('consumerDetail') },
      },
    },
    async (req) => {
      const { accountSid, consumerId } = req.params;
      // Only a consumer the account has seen (or named before) can be named: an unknown id is a
      // 404 and writes nothing, like a PUT of any other resource that does not exist.
      const scope = { accountSid, range: resolveRange({}, Date.now()) };
      if (!(await repo.get(scope, consumerId))) throw notFound('Consumer');
      await repo.update(accountSid, consumerId, req.body);
      const found = await repo.get(scope, consumerId);
      if (!found) throw notFound('Consumer');
      return found;
    },
  );
}
