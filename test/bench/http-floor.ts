/**
 * Limit (c) of the bench: the HTTP floor of this machine. A forked process runs the smallest
 * ingest listener that still does what any ingest must: a node:http server that reads each
 * request body, parses it as JSON and answers 202 `{"accepted":n,"rejected":[]}` (n = the
 * records of a batch, 1 for a single call). No validation, no Kafka, no storage. The bench sends
 * it the same requests as the batch and single-call phases, from the same load generators, so
 * the rates say how many records/s HTTP + JSON alone allow on this machine while the generators
 * share its cores.
 *
 * Protocol (IPC): the child sends {type:'ready', port}; on {type:'cpu'} it answers
 * {type:'cpu', seconds} (its own CPU time so far).
 */
import http from 'node:http';

const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let n = 0;
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { records?: unknown[] } | null;
      n = Array.isArray(body?.records) ? body.records.length : 1;
    } catch {
      res.writeHead(400, { 'content-type': 'application/json', 'content-length': 2 }).end('{}');
      return;
    }
    const out = `{"accepted":${n},"rejected":[]}`;
    res.writeHead(202, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(out) });
    res.end(out);
  });
});
server.listen(0, '127.0.0.1', () => {
  const addr = server.address();
  process.send!({ type: 'ready', port: typeof addr === 'object' && addr ? addr.port : 0 });
});
process.on('message', (m: { type: string }) => {
  if (m.type === 'cpu') {
    const u = process.cpuUsage();
    process.send!({ type: 'cpu', seconds: (u.user + u.system) / 1e6 });
  }
});
process.on('disconnect', () => process.exit(0));
