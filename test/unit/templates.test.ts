import { describe, expect, it } from 'vitest';
import type { ActionJob } from '../../schemas/action-job.schema.js';
import {
  renderDeep,
  renderString,
  TEMPLATE_VARIABLES,
  templateVars,
} from '../../services/actions/template.renderer.js';

const job: ActionJob = {
  v: 1,
  executionSid: 'wfx_' + 'a'.repeat(27),
  accountSid: 'acc_x',
  workflowSid: 'wfl_x',
  bucketSid: 'bkt_1',
  environmentSid: 'prod01',
  trigger: { type: 'error', message: 'GET /users failed' },
  requestSid: 'req_1',
  createdAt: '2026-01-01T00:00:00.000Z',
  context: {
    request: {
      method: 'GET',
      path: '/users/7',
      headers: { 'Content-Type': 'application/json', 'X-Request-Id': 'r-1' },
      body: '{"user":{"id":7,"tags":["a","b"]}}',
      query: { page: '2' },
    },
    response: { statusCode: 500, headers: { 'x-b': '1' }, body: { error: 'boom' }, size: 17 },
    timings: { duration: 12.5, responseTime: 10 },
    bucket: { sid: 'bkt_1', name: 'shop' },
    account: { name: 'Acme' },
    environment: { name: 'prod01' },
    metric: { value: 45.5, threshold: 10, timeWindow: '5m' },
  },
};
const vars = templateVars(job, { sid: 'wfl_x', name: 'Errors' });

describe('template variables (docs/workflows.md)', () => {
  it('substitutes every variable of the spec', () => {
    const expected: Record<string, string> = {
      'request.method': 'GET',
      'request.path': '/users/7',
      'request.headers': JSON.stringify(job.context.request.headers),
      'request.body': '{"user":{"id":7,"tags":["a","b"]}}',
      'request.query': '{"page":"2"}',
      'response.statusCode': '500',
      'response.headers': '{"x-b":"1"}',
      'response.body': '{"error":"boom"}',
      'response.size': '17',
      'timings.duration': '12.5',
      'timings.responseTime': '10',
      'bucket.name': 'shop',
      'bucket.sid': 'bkt_1',
      'account.name': 'Acme',
      'environment.name': 'prod01',
      'metric.value': '45.5',
      'metric.threshold': '10',
      'metric.timeWindow': '5m',
      'trigger.type': 'error',
      'trigger.message': 'GET /users failed',
    };
    for (const [name, value] of Object.entries(expected)) {
      expect(renderString(`<{{${name}}}>`, vars), name).toBe(`<${value}>`);
    }
    // every spec variable is known to the renderer
    for (const name of Object.keys(expected)) {
      const [root, field] = name.split('.');
      expect(TEMPLATE_VARIABLES[root!]).toContain(field);
    }
  });

  it('leaves unknown variables visible and tolerates spaces inside braces', () => {
    expect(renderString('{{ request.method }} {{nope.x}} {{request.nope}} {{request}} {{', vars)).toBe(
      'GET {{nope.x}} {{request.nope}} {{request}} {{',
    );
  });

  it('renders absent and null values as empty, deeper paths into objects and JSON bodies', () => {
    const noMetric = templateVars(
      { ...job, context: { ...job.context, metric: undefined } },
      { sid: 'w', name: 'n' },
    );
    expect(renderString('[{{metric.value}}]', noMetric)).toBe('[]');
    expect(renderString('{{request.headers.x-request-id}}', vars)).toBe('r-1');
    expect(renderString('{{request.body.user.id}} {{request.body.user.tags.1}}', vars)).toBe('7 b');
    expect(renderString('{{request.body.user.missing}}', vars)).toBe('{{request.body.user.missing}}');
    expect(renderString('{{workflow.name}} {{execution.sid}}', vars)).toBe(`Errors ${job.executionSid}`);
  });

  it('substitutes recursively through objects and arrays, keeping non-strings', () => {
    const config = {
      url: 'https://hooks.example.com/{{bucket.sid}}',
      headers: { 'X-Env': '{{environment.name}}' },
      body: { text: '{{trigger.message}}', list: ['{{response.statusCode}}', 3, true, null] },
    };
    expect(renderDeep(config, vars)).toEqual({
      url: 'https://hooks.example.com/bkt_1',
      headers: { 'X-Env': 'prod01' },
      body: { text: 'GET /users failed', list: ['500', 3, true, null] },
    });
  });

  it('never throws, whatever the input', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const odd = templateVars(
      { ...job, context: { ...job.context, request: { ...job.context.request, body: cyclic } } },
      { sid: 'w', name: 'n' },
    );
    expect(renderString('{{request.body}}', odd)).toBe('');
    expect(renderString('$& $1 {{request.method}}', vars)).toBe('$& $1 GET');
    for (const s of ['{{', '}}', '{{}}', '{{.}}', '{{a..b}}', '{{request.method', 'x'.repeat(10_000)]) {
      expect(() => renderString(s, vars)).not.toThrow();
    }
  });
});
