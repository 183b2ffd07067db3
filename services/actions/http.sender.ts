import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { ActionError } from './action.errors.js';
import {
  DnsError,
  OutboundRefusedError,
  type OutboundGuard,
  type ResolvedAddress,
} from './outbound-guard.js';

export interface HttpCall {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
}

export interface HttpOutcome {
  statusCode: number;
  /** first bytes of the answer, kept in the execution record to explain a failure */
  bodySnippet: string;
}

const SNIPPET_BYTES = 512;
const USER_AGENT = 'Tapline-Workflows/1';

/**
 * One guarded HTTP call. The URL passes the outbound guard first; the socket then connects to the
 * checked address (a `lookup` that answers with it), while the Host header, SNI and certificate
 * check keep the URL's host name. Redirects are not followed (the target could be private).
 * The whole call — DNS, connect, answer and body — is bounded by `signal`.
 */
export async function sendHttp(
  call: HttpCall,
  guard: OutboundGuard,
  signal: AbortSignal,
): Promise<HttpOutcome> {
  let checked: Awaited<ReturnType<OutboundGuard['check']>>;
  try {
    checked = await abortable(guard.check(call.url), signal);
  } catch (err) {
    if (err instanceof OutboundRefusedError) throw new ActionError(err.message, false);
    if (err instanceof DnsError) throw new ActionError(err.message, err.retryable);
    throw asActionError(err, signal);
  }
  const { url, target } = checked;
  const client = url.protocol === 'https:' ? https : http;
  const headers: Record<string, string> = { 'user-agent': USER_AGENT, ...lowerKeys(call.headers) };
  if (call.body !== undefined) headers['content-length'] = String(Buffer.byteLength(call.body));
  try {
    return await new Promise<HttpOutcome>((resolve, reject) => {
      const req = client.request(
        url,
        { method: call.method, headers, lookup: pinnedLookup(target), signal, agent: false },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            if (size < SNIPPET_BYTES) chunks.push(c);
            size += c.length;
          });
          res.on('end', () =>
            resolve({
              statusCode: res.statusCode ?? 0,
              bodySnippet: Buffer.concat(chunks).subarray(0, SNIPPET_BYTES).toString('utf8'),
            }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(call.body);
    });
  } catch (err) {
    throw asActionError(err, signal);
  }
}

/** Answers every lookup of the socket with the address the guard checked. */
function pinnedLookup(target: ResolvedAddress): LookupFunction {
  return ((_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) => {
    // NOTE: with autoSelectFamily (default on Node 20) net asks for `all: true` and expects an array.
    if (opts?.all) cb(null, [{ address: target.address, family: target.family }]);
    else cb(null, target.address, target.family);
  }) as unknown as LookupFunction;
}

/** Maps a status code to success or a classified failure. */
export function checkStatus(out: HttpOutcome): void {
  const s = out.statusCode;
  if (s >= 200 && s < 300) return;
  const snippet = out.bodySnippet ? `: ${out.bodySnippet.slice(0, 200)}` : '';
  if (s >= 300 && s < 400)
    throw new ActionError(`receiver answered ${s} (redirects are not followed)`, false, s);
  // 408 and 429 say "later"; other 4xx will not change on retry.
  const retryable = s >= 500 || s === 408 || s === 429;
  throw new ActionError(`receiver answered ${s}${snippet}`, retryable, s);
}

function asActionError(err: unknown, signal: AbortSignal): ActionError {
  if (err instanceof ActionError) return err;
  if (signal.aborted) {
    const reason: unknown = signal.reason;
    return reason instanceof ActionError ? reason : new ActionError('aborted', true);
  }
  const e = err as { code?: string; message?: string };
  // Invalid header names/values and similar are config errors: the next attempt fails the same way.
  const permanent = /^ERR_(INVALID|HTTP_INVALID)/.test(e.code ?? '');
  return new ActionError(`request failed: ${e.code ?? e.message ?? String(err)}`, !permanent);
}

/** Rejects with the signal's reason as soon as it aborts (dns lookup takes no signal). */
function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function lowerKeys(h: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) out[k.toLowerCase()] = v;
  return out;
}
