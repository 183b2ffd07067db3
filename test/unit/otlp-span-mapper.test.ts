import { describe, expect, it } from 'vitest';
import {
  decodeExportRequest,
  decodeExportResponse,
  encodeExportRequest,
  encodeExportResponse,
} from '../../services/ingest/otlp/otlp.codec.js';
import { countSpans, mapExport } from '../../services/ingest/otlp/span.mapper.js';

const attr = (key: string, v: string | number) => ({
  key,
  value: typeof v === 'number' ? { intValue: v } : { stringValue: v },
});
const START = 1_764_000_000_123_456_789n;

function span(kind: number | string, attributes: ReturnType<typeof attr>[], durNs = 1_234_567n) {
  return {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    kind,
    startTimeUnixNano: String(START),
    endTimeUnixNano: String(START + durNs),
    attributes,
  };
}

function exportOf(resources: { attrs: ReturnType<typeof attr>[]; spans: ReturnType<typeof span>[] }[]) {
  return {
    resourceSpans: resources.map((r) => ({
      resource: { attributes: r.attrs },
      scopeSpans: [{ spans: r.spans }],
    })),
  };
}

/** The same export through both encodings: the mapping must not depend on it. */
function bothEncodings(json: Record<string, unknown>, header: string | null) {
  return [
    mapExport(decodeExportRequest(Buffer.from(JSON.stringify(json)), 'json'), header),
    mapExport(decodeExportRequest(encodeExportRequest(json), 'protobuf'), header),
  ];
}

describe('OTLP span → request record mapping', () => {
  it('maps a current-convention server span, with exact nanosecond duration and ids as tags', () => {
    const json = exportOf([
      {
        attrs: [attr('service.name', 'shop'), attr('deployment.environment.name', 'prod01')],
        spans: [
          span('SPAN_KIND_SERVER', [
            attr('http.request.method', 'get'),
            attr('url.scheme', 'http'),
            attr('url.path', '/users/42'),
            attr('url.query', 'a=1&a=2'),
            attr('server.address', '::1'),
            attr('server.port', 8080),
            attr('http.route', '/users/:id'),
            attr('http.response.status_code', 204),
            attr('http.request.header.x-trace', 'abc'),
          ]),
        ],
      },
    ]);
    for (const m of bothEncodings(json, 'bkt_h')) {
      expect(m).toMatchObject({ spans: 1, notHttp: 0, noBucket: 0 });
      const [rec] = m.byBucket.get('bkt_h')!;
      expect(rec).toMatchObject({
        direction: 'in',
        endpoint: '/users/:id',
        environmentSid: 'prod01',
        request: {
          method: 'GET',
          url: 'http://[::1]:8080/users/42?a=1&a=2',
          path: '/users/42',
          port: 8080,
          queryString: { a: ['1', '2'] },
          headers: { 'x-trace': 'abc' },
        },
        response: { statusCode: 204 },
        createdAt: '2025-11-24T16:00:00.123Z',
      });
      const timings = rec!.timings as { duration: number; start: number; end: number };
      expect(timings.duration).toBe(1.234567);
      expect(timings.start).toBe(1_764_000_000_123.457);
      expect(rec!.tags).toEqual([
        { key: 'service.name', value: 'shop' },
        { key: 'deployment.environment', value: 'prod01' },
        { key: 'otel.trace_id', value: '0af7651916cd43dd8448eb211c80319c' },
        { key: 'otel.span_id', value: 'b7ad6b7169203331' },
      ]);
    }
  });

  it('maps the older names (http.method, http.target, net.*, string status) of a client span', () => {
    const json = exportOf([
      {
        attrs: [attr('deployment.environment', 'Staging EU')],
        spans: [
          span(3, [
            attr('http.method', 'PATCH'),
            attr('http.scheme', 'https'),
            attr('http.target', '/v1/items/9?x=y'),
            attr('net.peer.name', 'api.example.org'),
            attr('net.peer.port', 8443),
            attr('http.status_code', '409'),
            attr('http.user_agent', 'curl/8'),
          ]),
        ],
      },
    ]);
    for (const m of bothEncodings(json, 'bkt_h')) {
      const [rec] = m.byBucket.get('bkt_h')!;
      expect(rec).toMatchObject({
        direction: 'out',
        environmentSid: null,
        request: {
          method: 'PATCH',
          url: 'https://api.example.org:8443/v1/items/9?x=y',
          host: 'api.example.org',
          path: '/v1/items/9',
          headers: { 'user-agent': 'curl/8' },
          ip: null,
        },
        response: { statusCode: 409 },
      });
      expect(rec!.endpoint).toBeUndefined();
      expect(rec!.tags).toContainEqual({ key: 'deployment.environment', value: 'Staging EU' });
    }
  });

  it('reads _OTHER methods from method_original, prefers the current names, and nulls a missing response', () => {
    const json = exportOf([
      {
        attrs: [],
        spans: [
          span(2, [
            attr('http.request.method', '_OTHER'),
            attr('http.request.method_original', 'purge'),
            attr('http.method', 'GET'),
            attr('url.full', 'http://cache.local/x'),
          ]),
        ],
      },
    ]);
    const [rec] = mapExport(decodeExportRequest(Buffer.from(JSON.stringify(json)), 'json'), 'b').byBucket.get(
      'b',
    )!;
    expect(rec).toMatchObject({
      request: { method: 'PURGE', host: 'cache.local', path: '/x' },
      response: null,
    });
  });

  it('counts non-HTTP spans and HTTP spans without a bucket; the resource attribute beats the header', () => {
    const http = [attr('http.request.method', 'GET'), attr('url.full', 'http://a.example/')];
    const json = exportOf([
      {
        attrs: [attr('tapline.bucket', 'bkt_res')],
        spans: [span(2, http), span(1, http), span(4, http), span(2, [attr('rpc.system', 'grpc')])],
      },
      { attrs: [], spans: [span(3, http), span(0, http)] },
    ]);
    const withHeader = mapExport(decodeExportRequest(Buffer.from(JSON.stringify(json)), 'json'), 'bkt_h');
    expect(withHeader.spans).toBe(6);
    expect(withHeader.notHttp).toBe(4);
    expect(withHeader.noBucket).toBe(0);
    expect(withHeader.byBucket.get('bkt_res')).toHaveLength(1);
    expect(withHeader.byBucket.get('bkt_h')).toHaveLength(1);

    const noHeader = mapExport(decodeExportRequest(encodeExportRequest(json), 'protobuf'), null);
    expect(noHeader.noBucket).toBe(1);
    expect([...noHeader.byBucket.keys()]).toEqual(['bkt_res']);
    expect(countSpans(decodeExportRequest(encodeExportRequest(json), 'protobuf'))).toBe(6);
  });

  it('answers ExportTraceServiceResponse with partialSuccess only when spans were rejected', () => {
    expect(decodeExportResponse(encodeExportResponse('protobuf') as Buffer)).toEqual({});
    expect(
      decodeExportResponse(
        encodeExportResponse('protobuf', { rejectedSpans: 3, errorMessage: 'x' }) as Buffer,
      ),
    ).toEqual({ partialSuccess: { rejectedSpans: 3, errorMessage: 'x' } });
    expect(JSON.parse(encodeExportResponse('json') as string)).toEqual({});
  });

  it('refuses undecodable bodies as VALIDATION_ERROR, never another error', () => {
    const bad: [string, 'json' | 'protobuf'][] = [
      ['{"resourceSpans":[{"scopeSpans":[{"spans":[{"spanId":"xyz"}]}]}]}', 'json'],
      ['[1,2]', 'json'],
      ['null', 'json'],
      ['{"resourceSpans":"no"}', 'json'],
      ['\u00ff\u00ff\u00ff', 'protobuf'],
    ];
    for (const [body, enc] of bad) {
      expect(() => decodeExportRequest(Buffer.from(body, enc === 'json' ? 'utf8' : 'latin1'), enc)).toThrow(
        expect.objectContaining({ code: 'VALIDATION_ERROR', status: 400 }) as Error,
      );
    }
  });
});
