import protobuf from 'protobufjs';
import { validation } from '../../shared/errors.js';
import { depthError } from '../../shared/json-depth.js';
import OTLP_TRACE_DESCRIPTOR from '../../../schemas/otlp/trace.descriptor.json' with { type: 'json' };

/** The two OTLP/HTTP encodings (OTLP specification, "OTLP/HTTP Request"). */
export type OtlpEncoding = 'protobuf' | 'json';

export const CONTENT_TYPE: Record<OtlpEncoding, string> = {
  protobuf: 'application/x-protobuf',
  json: 'application/json',
};

/** A 64-bit integer as protobufjs decodes it (a `Long` when the `long` package is present). */
export type Int64 = protobuf.Long | number;

/** The decoded messages, as far as the mapper reads them (opentelemetry/proto/...). */
export interface AnyValue {
  stringValue?: string | null;
  boolValue?: boolean | null;
  intValue?: Int64 | null;
  doubleValue?: number | null;
  arrayValue?: { values?: AnyValue[] | null } | null;
  kvlistValue?: { values?: KeyValue[] | null } | null;
  bytesValue?: Uint8Array | null;
  /** the name of the field of the `value` oneof that is set */
  value?: string;
}
export interface KeyValue {
  key?: string | null;
  value?: AnyValue | null;
}
export interface Span {
  traceId?: Uint8Array | null;
  spanId?: Uint8Array | null;
  parentSpanId?: Uint8Array | null;
  name?: string | null;
  kind?: number | null;
  startTimeUnixNano?: Int64 | null;
  endTimeUnixNano?: Int64 | null;
  attributes?: KeyValue[] | null;
}
export interface ResourceSpans {
  resource?: { attributes?: KeyValue[] | null } | null;
  scopeSpans?: { spans?: Span[] | null }[] | null;
}
export interface ExportTraceServiceRequest {
  resourceSpans?: ResourceSpans[] | null;
}

const root = protobuf.Root.fromJSON(OTLP_TRACE_DESCRIPTOR as unknown as protobuf.INamespace);
const RequestType = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
const ResponseType = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse');

/**
 * `google.rpc.Status`, the body of an OTLP/HTTP error answer in the protobuf encoding (its
 * `details` field, a list of `Any`, is left out: this server sends none).
 */
const StatusType = new protobuf.Type('Status')
  .add(new protobuf.Field('code', 1, 'int32'))
  .add(new protobuf.Field('message', 2, 'string'));
new protobuf.Root().define('google.rpc').add(StatusType);

const HEX = /^[0-9a-fA-F]*$/;

/** OTLP/JSON writes trace and span ids as hex (not base64 as protobuf's JSON mapping would). */
function hexBytes(v: unknown, where: string): unknown {
  if (typeof v !== 'string') return v;
  if (v.length % 2 !== 0 || !HEX.test(v))
    throw validation(`${where} is not a hex string`, { [where]: 'hex' });
  return Buffer.from(v, 'hex');
}

const list = (v: unknown): Record<string, unknown>[] =>
  Array.isArray(v) ? v.filter((x): x is Record<string, unknown> => x !== null && typeof x === 'object') : [];

/** Replaces the hex trace/span ids of an OTLP/JSON request by bytes, in place. */
function idsFromHex(body: unknown): void {
  if (body === null || typeof body !== 'object') return;
  for (const rs of list((body as Record<string, unknown>).resourceSpans)) {
    for (const ss of list(rs.scopeSpans)) {
      for (const span of list(ss.spans)) {
        for (const f of ['traceId', 'spanId', 'parentSpanId']) if (f in span) span[f] = hexBytes(span[f], f);
        for (const link of list(span.links)) {
          for (const f of ['traceId', 'spanId']) if (f in link) link[f] = hexBytes(link[f], `links.${f}`);
        }
      }
    }
  }
}

/**
 * Decodes an ExportTraceServiceRequest with protobufjs from the vendored OTLP definitions. JSON
 * goes through `fromObject` after its hex ids become bytes, so both encodings yield the same
 * messages (int64 strings or numbers as Long, enum names or numbers as numbers; unknown fields
 * are ignored, as the specification asks). Anything undecodable is a 400, as is JSON nesting
 * deeper than MAX_JSON_DEPTH levels.
 */
export function decodeExportRequest(body: Buffer, encoding: OtlpEncoding): ExportTraceServiceRequest {
  try {
    if (encoding === 'protobuf') return RequestType.decode(body) as unknown as ExportTraceServiceRequest;
    // NOTE: plain JSON.parse: a `__proto__` key becomes an own property, and fromObject reads only
    // the message's declared fields, so no prototype is ever touched.
    const json: unknown = JSON.parse(body.toString('utf8'));
    if (json === null || typeof json !== 'object' || Array.isArray(json)) {
      throw validation('Body is not an OTLP ExportTraceServiceRequest (a JSON object)');
    }
    const deep = depthError(json, 'The body', 'body');
    if (deep) throw deep;
    idsFromHex(json);
    return RequestType.fromObject(json as Record<string, unknown>) as unknown as ExportTraceServiceRequest;
  } catch (err) {
    if ((err as { code?: unknown }).code === 'VALIDATION_ERROR') throw err;
    throw validation(`Body is not a valid OTLP ExportTraceServiceRequest (${encoding})`, {
      reason: String((err as Error).message).slice(0, 200),
    });
  }
}

export interface PartialSuccess {
  rejectedSpans: number;
  errorMessage: string;
}

/**
 * An ExportTraceServiceResponse. `partialSuccess` is left unset when every span was accepted, as
 * the specification asks. JSON writes `rejectedSpans` (an int64) as a decimal string, as the
 * proto3 JSON mapping writes every 64-bit integer.
 */
export function encodeExportResponse(encoding: OtlpEncoding, partial?: PartialSuccess): Buffer | string {
  if (encoding === 'json')
    return JSON.stringify(
      partial
        ? {
            partialSuccess: {
              rejectedSpans: String(partial.rejectedSpans),
              errorMessage: partial.errorMessage,
            },
          }
        : {},
    );
  const msg = ResponseType.create(partial ? { partialSuccess: partial } : {});
  return Buffer.from(ResponseType.encode(msg).finish());
}

/** gRPC status codes for the HTTP answers (OTLP/HTTP error bodies carry a `google.rpc.Status`). */
const GRPC_CODE: Record<number, number> = {
  400: 3, // INVALID_ARGUMENT
  401: 16, // UNAUTHENTICATED
  403: 7, // PERMISSION_DENIED
  404: 5, // NOT_FOUND
  405: 12, // UNIMPLEMENTED
  413: 8, // RESOURCE_EXHAUSTED
  415: 3, // INVALID_ARGUMENT
  429: 8, // RESOURCE_EXHAUSTED
  503: 14, // UNAVAILABLE
};

/** A protobuf-encoded `google.rpc.Status` for an HTTP error status. */
export function encodeStatus(httpStatus: number, message: string): Buffer {
  const code = GRPC_CODE[httpStatus] ?? (httpStatus >= 500 ? 13 : 2); // INTERNAL : UNKNOWN
  return Buffer.from(StatusType.encode(StatusType.create({ code, message })).finish());
}

/** Decodes a `google.rpc.Status` (tests and the bench read error bodies with it). */
export function decodeStatus(body: Uint8Array): { code: number; message: string } {
  return StatusType.toObject(StatusType.decode(body), { defaults: true }) as {
    code: number;
    message: string;
  };
}

/** Decodes an ExportTraceServiceResponse in the protobuf encoding (tests, bench). */
export function decodeExportResponse(body: Uint8Array): { partialSuccess?: PartialSuccess } {
  return ResponseType.toObject(ResponseType.decode(body), { longs: Number }) as {
    partialSuccess?: PartialSuccess;
  };
}

/** Encodes an ExportTraceServiceRequest given as OTLP/JSON (tests, bench). */
export function encodeExportRequest(json: Record<string, unknown>): Buffer {
  const copy = JSON.parse(JSON.stringify(json)) as Record<string, unknown>;
  idsFromHex(copy);
  return Buffer.from(RequestType.encode(RequestType.fromObject(copy)).finish());
}
