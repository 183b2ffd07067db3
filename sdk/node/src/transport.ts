import http from 'node:http';
import https from 'node:https';

/** Header on the SDK's own calls: the outgoing capture skips requests carrying it. */
export const SDK_HEADER = 'x-tapline-sdk';
export const SDK_VERSION = '0.1.0';
export const SDK_NAME = `tapline-node/${SDK_VERSION}`;

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const agents = {
  http: new http.Agent({ keepAlive: true, maxSockets: 4 }),
  https: new https.Agent({ keepAlive: true, maxSockets: 4 }),
};

/**
 * One HTTP call with node:http(s) and a keep-alive agent of the SDK's own. Resolves with any
 * status; rejects on network errors and on the timeout. Never follows redirects.
 */
export function request(
  url: URL,
  opts: { method: string; headers: Record<string, string>; body?: Buffer; timeoutMs: number },
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const mod = url.protocol === 'https:' ? https : http;
    const headers: Record<string, string> = { ...opts.headers, [SDK_HEADER]: SDK_VERSION };
    if (opts.body) headers['content-length'] = String(opts.body.length);
    const req = mod.request(url, {
      method: opts.method,
      headers,
      agent: url.protocol === 'https:' ? agents.https : agents.http,
    });
    const timer = setTimeout(
      () => req.destroy(new Error(`timeout after ${opts.timeoutMs} ms`)),
      opts.timeoutMs,
    );
    timer.unref();
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        // Answers are small; a huge one is cut rather than held.
        if (size < 1_048_576) chunks.push(c);
        size += c.length;
      });
      res.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
        });
      });
    });
    req.end(opts.body);
  });
}

/** `Retry-After` in milliseconds (delta-seconds or an HTTP date), or undefined. */
export function retryAfterMs(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(v)) return Math.max(0, Math.round(Number(v) * 1000));
  const at = Date.parse(v);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

/** Exponential backoff with full jitter: uniform in [0, min(cap, base * 2^attempt)]. */
export function backoffMs(attempt: number, baseMs: number, capMs: number, random = Math.random): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.round(random() * ceiling);
}

export type Retryable = 'retry' | 'drop' | 'ok';

/** What an answer means for a batch: 2xx ok; network errors, 408/429/5xx retry; other 4xx drop. */
export function classify(status: number): Retryable {
  if (status >= 200 && status < 300) return 'ok';
  if (status === 408 || status === 429 || status >= 500) return 'retry';
  return 'drop';
}
