import Fastify from 'fastify';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { ActionJob } from '../../schemas/action-job.schema.js';
import { ALL_SCHEMAS, ref, type FromSchemas, type Reply } from '../../schemas/index.js';
import type { bucketSchema } from '../../schemas/bucket.schema.js';
import type { ActionType, WorkflowAction, WorkflowCreate } from '../../schemas/workflow.schema.js';
import type { SchemaTypes } from '../../services/api/api.types.js';

/**
 * The types derived from schemas/ (json-schema-to-ts) and the API's type provider. The type
 * assertions are checked by `tsc` (npm run typecheck): a schema change that breaks them fails there.
 */
describe('types from schemas', () => {
  it('resolves a $ref to a registered $id and closes replies', () => {
    expect(ref('bucket')).toEqual({ $ref: 'bucket#' });
    // @ts-expect-error an unknown $id is a type error
    ref('noSuchSchema');

    type Bucket = FromSchemas<ReturnType<typeof ref<'bucket'>>>;
    expectTypeOf<Bucket['name']>().toEqualTypeOf<string>();
    expectTypeOf<Reply<typeof bucketSchema>>().toEqualTypeOf<{
      sid: string;
      accountSid: string;
      name: string;
      verifySslCerts: boolean;
      appIsConnected: boolean;
      createdAt: string;
      updatedAt?: string | null;
    }>();
  });

  it('derives the workflow and action job types the runner and routes use', () => {
    expectTypeOf<WorkflowAction['type']>().toEqualTypeOf<ActionType>();
    expectTypeOf<WorkflowAction['order']>().toEqualTypeOf<number>();
    // A create body's action config is typed per action type (oneOf by `type`).
    type Webhook = Extract<WorkflowCreate['actions'][number], { type: 'webhook' }>;
    expectTypeOf<Webhook['config']['url']>().toEqualTypeOf<string>();
    expectTypeOf<ActionJob['trigger']['type']>().toEqualTypeOf<
      'request' | 'error' | 'threshold' | 'schedule' | 'slo_burn' | 'regression'
    >();
    // @ts-expect-error a job has no field the schema does not declare
    expectTypeOf<ActionJob['nope']>().toBeUnknown();
  });

  it('types a route from its schemas through the type provider', async () => {
    const app = Fastify().withTypeProvider<SchemaTypes>();
    for (const schema of ALL_SCHEMAS) app.addSchema(schema);
    app.post(
      '/buckets/:accountSid',
      {
        schema: {
          params: {
            type: 'object',
            required: ['accountSid'],
            properties: { accountSid: { type: 'string' } },
          },
          body: ref('bucketCreate'),
          response: { 201: ref('bucket') },
        } as const,
      },
      async (req, reply) => {
        expectTypeOf(req.params.accountSid).toEqualTypeOf<string>();
        expectTypeOf(req.body).toEqualTypeOf<{ name: string; verifySslCerts?: boolean }>();
        return reply.status(201).send({
          sid: 'bkt_1',
          accountSid: req.params.accountSid,
          name: req.body.name,
          verifySslCerts: req.body.verifySslCerts ?? true,
          appIsConnected: false,
          createdAt: new Date(0).toISOString(),
          updatedAt: null,
        });
      },
    );
    const res = await app.inject({ method: 'POST', url: '/buckets/acc_1', payload: { name: 'b' } });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ accountSid: 'acc_1', name: 'b', verifySslCerts: true });
    await app.close();
  });
});
