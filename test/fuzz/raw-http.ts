import http from 'node:http';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

/**
 * One HTTP request with the path sent byte for byte: `fetch` normalises `..` and `%2e%2e` away
 * (WHATWG URL rules), which would hide exactly what a traversal test wants to send.
 */
export function rawRequest(
  baseUrl: string,
  req: { method: string; url: string; headers?: Record<string, string>; body?: string | Buffer },
  timeoutMs = 30_000,
): Promise<RawResponse> {
  const base = new URL(baseUrl);
  const body =
    req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body, 'utf8');
  return new Promise((resolve, reject) => {
    let answered = false;
    const r = http.request(
      {
        host: base.hostname,
        port: base.port,
        method: req.method,
        path: req.url,
        agent,
        headers: {
          ...(req.headers ?? {}),
          ...(body !== undefined ? { 'content-length': String(body.length) } : {}),
        },
        timeout: timeoutMs,
      },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        const done = () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          });
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', done);
        // The server may answer early (401, 413) and close while the body is still being sent.
        res.on('error', done);
        res.on('aborted', done);
      },
    );
    r.on('timeout', () =>
      r.destroy(new Error(`timeout after ${timeoutMs} ms: ${req.method} ${req.url.slice(0, 200)}`)),
    );
    r.on('error', (err: Error & { code?: string }) => {
      if (answered) return;
      // An early answer can lose the race with our write failing (EPIPE/ECONNRESET): the status
      // then cannot be read, which callers see as -1.
      if (err.code === 'EPIPE' || err.code === 'ECONNRESET') {
        resolve({
          status: -1,
          headers: {},
          text: `${err.code}: connection closed before an answer was read`,
        });
        return;
      }
      reject(err);
    });
    void (async () => {
      // In slices, stopping once an answer arrived: a listener refusing a large body (413, 401)
      // answers at once and closes, and writing on would only turn that answer into EPIPE.
      for (let off = 0; body !== undefined && off < body.length; off += 64 * 1024) {
        if (answered || r.destroyed) return;
        await new Promise<void>((done) => r.write(body.subarray(off, off + 64 * 1024), () => done()));
      }
      if (!answered && !r.destroyed) r.end();
    })();
  });
}

/** Runs `fn` over `items` with at most `concurrency` in flight; results keep the input order. */
export async function mapLimit<T, R>(
  items: T[],
  concurrency: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out: R[] = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  });
  await Promise.all(workers);
  return out;
}
