import http from 'node:http';
import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });

/** Bodies above this size go through `largeBodyRequest`. */
const LARGE_BODY = 256 * 1024;

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
  if (body && body.length > LARGE_BODY) return largeBodyRequest(base, { ...req, body }, timeoutMs);
  return new Promise((resolve, reject) => {
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
        // An event stream (the live tail) never ends by itself: its status and headers are the
        // answer, and the connection is closed at once.
        if (String(res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: '' });
          r.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    r.on('timeout', () =>
      r.destroy(new Error(`timeout after ${timeoutMs} ms: ${req.method} ${req.url.slice(0, 200)}`)),
    );
    r.on('error', reject);
    if (body !== undefined) r.write(body);
    r.end();
  });
}

/**
 * A request with a large body over a plain socket, sent the way a careful client does: headers
 * first, then the body in slices, stopping as soon as the server answers. A listener refusing a
 * body (413 on Content-Length, 401 before reading it) answers at once and closes; node:http would
 * keep writing, get EPIPE and lose the answer.
 */
function largeBodyRequest(
  base: URL,
  req: { method: string; url: string; headers?: Record<string, string>; body: Buffer },
  timeoutMs: number,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: base.hostname, port: Number(base.port) });
    const received: Buffer[] = [];
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const raw = Buffer.concat(received);
      const split = raw.indexOf('\r\n\r\n');
      if (split < 0) {
        resolve({ status: -1, headers: {}, text: 'connection closed before an answer was read' });
        return;
      }
      const [statusLine, ...lines] = raw.subarray(0, split).toString('latin1').split('\r\n');
      const headers: http.IncomingHttpHeaders = {};
      for (const l of lines) {
        const i = l.indexOf(':');
        headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
      }
      let bodyBytes = raw.subarray(split + 4);
      const length = Number(headers['content-length']);
      if (Number.isFinite(length)) bodyBytes = bodyBytes.subarray(0, length);
      resolve({ status: Number(statusLine!.split(' ')[1]), headers, text: bodyBytes.toString('utf8') });
    };
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      socket.destroy();
      reject(new Error(`timeout after ${timeoutMs} ms: ${req.method} ${req.url.slice(0, 200)}`));
    }, timeoutMs);
    socket.on('data', (c: Buffer) => received.push(c));
    socket.on('end', finish);
    socket.on('close', finish);
    socket.on('error', finish);
    socket.on('connect', () => {
      const head = [
        `${req.method} ${req.url} HTTP/1.1`,
        `Host: ${base.host}`,
        'Connection: close',
        `Content-Length: ${req.body.length}`,
        ...Object.entries(req.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
        '',
        '',
      ].join('\r\n');
      socket.write(head);
      void (async () => {
        // Give a server that decides on the headers alone the time to answer before the body.
        await new Promise((r) => setTimeout(r, 50));
        for (let off = 0; off < req.body.length; off += 64 * 1024) {
          if (received.length || settled || socket.destroyed) return;
          await new Promise<void>((done) =>
            socket.write(req.body.subarray(off, off + 64 * 1024), () => done()),
          );
        }
      })();
    });
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
