import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedCall {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  json: unknown;
  at: number;
}

/** How the receiver answers the n-th call (0-based) of a path; `hang` never answers. */
export type Reply = { status: number; body?: string } | 'hang';

/**
 * A real HTTP server on 127.0.0.1:0 standing in for webhook, chat and automation receivers.
 * Records every call; `reply` decides the answer per path and call number.
 */
export async function startReceiver(reply: (path: string, n: number) => Reply = () => ({ status: 200 })) {
  const calls: ReceivedCall[] = [];
  const counts = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = body ? JSON.parse(body) : undefined;
      } catch {
        json = undefined;
      }
      const path = req.url ?? '/';
      const n = counts.get(path) ?? 0;
      counts.set(path, n + 1);
      calls.push({ method: req.method ?? '', path, headers: req.headers, body, json, at: Date.now() });
      const r = reply(path, n);
      if (r === 'hang') return;
      res.writeHead(r.status, { 'content-type': 'text/plain' });
      res.end(r.body ?? 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    callsTo: (path: string) => calls.filter((c) => c.path === path),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
