import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { TaplineCore } from '../../sdk/node/src/client.js';
import { Tapline } from '../../sdk/node/src/index.js';

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

describe('sdk: incoming records are built after the turn’s responses', () => {
  it('answers every request that arrived in one turn before building any of their records', async () => {
    // No ingest: nothing is sent here; the settings are given directly.
    const tapline = new Tapline({
      endpoint: 'http://127.0.0.1:9',
      bucketSid: 'bkt_defer',
      token: 't',
      handleProcessEvents: false,
      flushIntervalMs: 600_000,
    });
    tapline.applySettings({ redactAt: 'client', redactionRules: [], exclusionRules: [], settings: {} });
    closers.push(() => tapline.shutdown(0));
    const capturedAtHandler: number[] = [];
    const server = http.createServer(
      tapline.httpHandler((_req, res) => {
        capturedAtHandler.push(tapline.stats().captured);
        res.setHeader('content-type', 'application/json');
        res.end('{"hello":"world"}');
      }),
    );
    let accepted = 0;
    const allAccepted = new Promise<void>((resolve) =>
      server.on('connection', () => {
        if (++accepted === 5) resolve();
      }),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    closers.push(() => new Promise((r) => server.close(r)));
    const port = (server.address() as AddressInfo).port;
    const sockets = await Promise.all(
      [1, 2, 3, 4, 5].map(
        () =>
          new Promise<net.Socket>((resolve) => {
            const s = net.connect(port, '127.0.0.1', () => resolve(s));
          }),
      ),
    );
    closers.push(async () => sockets.forEach((s) => s.destroy()));
    await allAccepted;
    let answered = 0;
    const allAnswered = new Promise<void>((resolve) => {
      for (const s of sockets)
        s.on('data', (d: Buffer) => {
          expect(d.toString()).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\{"hello":"world"\}$/);
          if (++answered === 5) resolve();
        });
    });
    // Written in one go, so the server's next poll phase finds all five requests readable.
    for (const s of sockets) s.write('GET /hello?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await allAnswered;
    // Each handler ran before any record of the turn was built; all five are queued afterwards.
    expect(capturedAtHandler).toEqual([0, 0, 0, 0, 0]);
    expect(tapline.stats().captured).toBe(5);
    expect(tapline.stats().queuedRecords).toBe(5);
  });
});

describe('sdk: deferred record building', () => {
  const turn = () => new Promise<void>((r) => setImmediate(r));
  /** A core that captures and sends nothing by itself: only what the test defers is built. */
  const disabledCore = () =>
    new TaplineCore({ endpoint: 'http://127.0.0.1:9', bucketSid: 'bkt_defer', token: 't', enabled: false });

  it('builds a burst over a few turns, at least half of what waits per turn, in order', async () => {
    const core = disabledCore();
    const built: number[] = [];
    for (let i = 0; i < 1000; i++) core.defer({ build: () => built.push(i) });
    expect(built).toHaveLength(0);
    await turn();
    expect(built.length).toBeGreaterThanOrEqual(500);
    expect(built.length).toBeLessThan(1000);
    for (let i = 0; i < 20 && built.length < 1000; i++) await turn();
    expect(built).toEqual([...Array(1000).keys()]);
  });

  it('flush builds everything still waiting at once; a throwing build is counted, not thrown', async () => {
    const core = disabledCore();
    const built: number[] = [];
    for (let i = 0; i < 300; i++)
      core.defer({
        build: () => {
          if (i === 7) throw new Error('boom');
          built.push(i);
        },
      });
    await core.flush(100);
    expect(built).toHaveLength(299);
    expect(core.stats().internalErrors).toBe(1);
  });
});
