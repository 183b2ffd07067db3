import { describe, expect, it } from 'vitest';
import { http, testEnv } from '../helpers/client.js';

interface Health {
  status: string;
  rssBytes: number;
  heapUsedBytes: number;
  uptimeSeconds: number;
  eventLoopDelayMs: { p50: number; p99: number; max: number };
  eventLoopDelaySinceStartMs: { p50: number; p99: number; max: number };
  eventLoopWindowSeconds: number;
}

describe('GET /healthz (API port): process figures for soak runs', () => {
  it('answers without a token with memory, uptime and event-loop delay', async () => {
    const res = await http<Health>('GET', `${testEnv().apiUrl}/healthz`);
    expect(res.status).toBe(200);
    const h = res.body;
    expect(h.status).toBe('ok');
    expect(h.rssBytes).toBeGreaterThan(h.heapUsedBytes);
    expect(h.heapUsedBytes).toBeGreaterThan(1024 * 1024);
    expect(h.uptimeSeconds).toBeGreaterThan(0);
    expect(h.eventLoopWindowSeconds).toBe(10);
    for (const d of [h.eventLoopDelayMs, h.eventLoopDelaySinceStartMs]) {
      expect(d.p50).toBeGreaterThanOrEqual(0);
      expect(d.p99).toBeGreaterThanOrEqual(d.p50);
      expect(d.max).toBeGreaterThanOrEqual(d.p99);
    }
  });

  it('does not reset on read: two callers see the same since-start figures grow, never shrink', async () => {
    const a = (await http<Health>('GET', `${testEnv().apiUrl}/healthz`)).body;
    const b = (await http<Health>('GET', `${testEnv().apiUrl}/healthz`)).body;
    expect(b.eventLoopDelaySinceStartMs.max).toBeGreaterThanOrEqual(a.eventLoopDelaySinceStartMs.max);
    expect(b.uptimeSeconds).toBeGreaterThanOrEqual(a.uptimeSeconds);
  });
});
