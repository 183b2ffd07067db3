import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createHttpServer } from '../../services/shared/http-server.js';
import { describeAjvError } from '../../services/shared/validation-messages.js';
import { ALL_SCHEMAS } from '../../schemas/index.js';
import { createAjv, errorDetails, validator } from '../../services/shared/schemas.js';

/**
 * A request refused by its route's schema answers in words a person can act on: the envelope's
 * message names each field with what is wrong, and `details` holds the same phrase per field (the
 * dashboard shows it next to the field). No regular expression or ajv wording reaches the client;
 * the code, the status and the details' keys stay those of the spec's VALIDATION_ERROR.
 */
let app: FastifyInstance;

beforeAll(async () => {
  app = createHttpServer({ log: pino({ level: 'silent' }), bodyLimit: 64 * 1024 });
  app.post('/mcp', { schema: { body: { $ref: 'mcpTokenCreate#' } } }, async () => ({ ok: true }));
  app.post('/token', { schema: { body: { $ref: 'apiTokenCreate#' } } }, async () => ({ ok: true }));
  app.get(
    '/list',
    {
      schema: {
        querystring: {
          type: 'object',
          properties: {
            limit: { type: 'integer', minimum: 1, maximum: 100 },
            order: { type: 'string', enum: ['asc', 'desc'] },
          },
        },
      },
    },
    async () => ({ ok: true }),
  );
  await app.ready();
});

afterAll(async () => {
  await app.close();
});

interface Envelope {
  success: boolean;
  error: { code: string; message: string; details: Record<string, string> };
}

async function refused(method: 'GET' | 'POST', url: string, payload?: object): Promise<Envelope['error']> {
  const res = await app.inject({ method, url, ...(payload === undefined ? {} : { payload }) });
  expect(res.statusCode, res.body).toBe(400);
  const body = res.json<Envelope>();
  expect(body.success).toBe(false);
  expect(body.error.code).toBe('VALIDATION_ERROR');
  return body.error;
}

describe('schema refusals in words', () => {
  it('says what an environment sid must look like, in the message and at the field', async () => {
    const err = await refused('POST', '/mcp', { name: 'x', environmentSid: 'PROD01' });
    expect(err.message).toBe('environmentSid must be 6 lowercase letters or digits (e.g. "prod01")');
    expect(err.details).toEqual({
      'body.environmentSid': 'must be 6 lowercase letters or digits (e.g. "prod01")',
    });
  });

  it('names every missing field and every unknown one', async () => {
    const err = await refused('POST', '/mcp', { zzExtra: 1 });
    expect(err.details).toEqual({
      'body.name': 'is required',
      'body.environmentSid': 'is required',
      'body.zzExtra': 'is not a known field',
    });
    expect(err.message).toBe('name is required; environmentSid is required; zzExtra is not a known field');
  });

  it('tells a wrong type, a nullable one, an empty text and a bad date in words', async () => {
    const err = await refused('POST', '/token', {
      name: '',
      scopes: 'all',
      environmentSid: 7,
      expiresAt: 'tomorrow',
    });
    expect(err.details['body.name']).toBe('must not be empty');
    expect(err.details['body.scopes']).toBe('must be a list');
    expect(err.details['body.environmentSid']).toBe('must be text or null');
    expect(err.details['body.expiresAt']).toMatch(/^must be a date and time in ISO 8601/);
    for (const phrase of [err.message, ...Object.values(err.details)])
      expect(phrase).not.toMatch(/must match|must NOT|must have required|\^|\$|\{\d/);
  });

  it('words query string limits and choices, and spells out at most three fields', async () => {
    const err = await refused('GET', '/list?limit=500&order=up');
    expect(err.details).toEqual({
      'querystring.limit': 'must be at most 100',
      'querystring.order': 'must be one of "asc" or "desc"',
    });
    expect(err.message).toBe('limit must be at most 100; order must be one of "asc" or "desc"');
    const many = await refused('POST', '/mcp', { a: 1, b: 2, c: 3, d: 4 });
    expect(Object.keys(many.details)).toHaveLength(6);
    expect(many.message).toMatch(/; and 3 more fields$/);
  });

  it('refuses a body that is not an object as a whole', async () => {
    const err = await refused('POST', '/mcp', [1, 2]);
    expect(err.details).toEqual({ body: 'must be an object' });
    expect(err.message).toBe('The body must be an object');
  });
});

/** Every `pattern` a schema declares, found by walking the registered schemas. */
function patternsOf(node: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(node)) for (const x of node) patternsOf(x, out);
  else if (node && typeof node === 'object')
    for (const [k, v] of Object.entries(node)) {
      if (k === 'pattern' && typeof v === 'string') out.add(v);
      else patternsOf(v, out);
    }
  return out;
}

it('has words for every pattern the schemas declare', () => {
  const unworded = [...patternsOf(ALL_SCHEMAS)].filter(
    (pattern) =>
      describeAjvError({ keyword: 'pattern', params: { pattern }, instancePath: '', schemaPath: '' }) ===
      'does not have the expected format',
  );
  expect(patternsOf(ALL_SCHEMAS).size).toBeGreaterThan(5);
  expect(unworded).toEqual([]);
});

it('words the per-record rejections of ingest the same way (no pattern, no ajv wording)', () => {
  const validate = validator('ingestRecord');
  const record = {
    environmentSid: 'PROD-1',
    request: { method: 'GET', url: 'https://api.example.com/x', path: '/x', headers: {} },
    response: { statusCode: 'ok' },
  };
  expect(validate(record)).toBe(false);
  const details = errorDetails(validate.errors);
  expect(details.environmentSid).toMatch(/6 .*letters or digits/);
  expect(details['response.statusCode']).toMatch(/^must be /);
  for (const phrase of Object.values(details)) expect(phrase).not.toMatch(/pattern|\^|\$/);
});

it('words a oneOf picked by its discriminator: that branch only, an unknown or a missing type', () => {
  const validate = createAjv({ discriminator: true }).getSchema('consumerIdentificationUpdate')!;
  const details = (sources: unknown[]) => {
    expect(validate({ sources })).toBe(false);
    return errorDetails(validate.errors);
  };
  expect(details([{ type: 'header', name: 'X API Key' }])).toEqual({
    'sources.0.name':
      "must be an HTTP header name (letters, digits and !#$%&'*+.^_`|~-, no spaces or colons)",
  });
  expect(details([{ type: 'bearer' }, { type: 'cookie', name: 'sid' }])).toEqual({
    'sources.1': 'has an unknown type "cookie"',
  });
  expect(details([{ name: 'X-Key' }])).toEqual({
    'sources.0.type': 'is required',
    'sources.0': 'needs a type',
  });
});
