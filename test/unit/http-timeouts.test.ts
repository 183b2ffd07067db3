import net from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createHttpServer } from '../../services/shared/http-server.js';

/**
 * Issue 14 point 12: the HTTP listeners bound how long a request may take to arrive and how long a
 * connection may sit idle (HTTP_REQUEST_TIMEOUT_MS, HTTP_CONNECTION_TIMEOUT_MS): a client that
 * sends its headers a byte at a time, or opens connections and sends nothing, cannot hold them.
 */
let app: FastifyInstance;
let port: number;

beforeAll(async () => {
  app = createHttpServer({
    log: pino({ level: 'silent' }),
    bodyLimit: 1024,
    timeouts: { requestMs: 1000, connectionMs: 1500 },
  });
  app.get('/ok', async () => ({ ok: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as net.AddressInfo).port;
});

afterAll(async () => {
  await app.close();
});

/** Opens a connection, runs `send`, resolves with what came back and when the server closed it. */
function hold(
  send: (s: net.Socket) => void,
  waitMs: number,
): Promise<{ text: string; closedAfterMs: number }> {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1', () => send(socket));
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString('utf8')));
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closedAfterMs: Infinity });
    }, waitMs);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text, closedAfterMs: Date.now() - started });
    });
    socket.on('error', () => undefined);
  });
}

describe('HTTP timeouts', () => {
  it('answers 408 and closes a request whose headers never finish', async () => {
    const r = await hold((s) => {
      s.write('GET /ok HTTP/1.1\r\nHost: x\r\n');
      const drip = setInterval(() => s.writable && s.write('x-slow: 1\r\n'), 200);
      s.on('close', () => clearInterval(drip));
    }, 8000);
    expect(r.closedAfterMs).toBeLessThan(8000);
    expect(r.text).toMatch(/^HTTP\/1\.1 408/);
    expect(r.text).toContain('"success":false');
  }, 15_000);

  it('closes a connection that sends nothing', async () => {
    const r = await hold(() => undefined, 8000);
    expect(r.closedAfterMs).toBeLessThan(8000);
  }, 15_000);

  it('closes a kept-alive connection once idle', async () => {
    const r = await hold((s) => s.write('GET /ok HTTP/1.1\r\nHost: x\r\n\r\n'), 8000);
    expect(r.text).toMatch(/^HTTP\/1\.1 200/);
    expect(r.closedAfterMs).toBeLessThan(8000);
  }, 15_000);
});
