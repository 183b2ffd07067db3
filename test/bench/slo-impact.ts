/**
 * Bench query set of release impact and SLOs (docs/releases.md, docs/slos.md), run by bench.ts's
 * query phase against the large stored sets: the impact of one deployment over the 50 endpoints of
 * the set, the status of 100 SLOs, and the service CPU of one pass over those 100 SLOs (what the
 * minute's burn-rate evaluation costs at most: it runs one query per SLO over fewer windows).
 */
import { performance } from 'node:perf_hooks';
import { cpuSeconds } from './bench-stack.js';
import { ENDPOINTS } from './records.js';

export interface Timing {
  path: string;
  status: number;
  medianMs: number | null;
  p95Ms: number | null;
  note?: string;
}

type Call = <T>(method: string, p: string, body?: unknown) => Promise<{ status: number; body: T }>;

const quantile = (xs: number[], q: number) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
const round = (v: number) => Math.round(v * 10) / 10;

function timing(path: string, ms: number[], note?: string): Timing {
  ms.sort((x, y) => x - y);
  return { path, status: 200, medianMs: round(quantile(ms, 0.5)), p95Ms: round(quantile(ms, 0.95)), note };
}

export async function timeReleaseAndSlos(
  call: Call,
  account: string,
  bucket: string,
  servicePid: number | undefined,
  calls: number,
  log: (s: string) => void,
): Promise<Record<string, Timing>> {
  const out: Record<string, Timing> = {};
  // A deployment 6 hours ago, in the middle of the stored day.
  const ev = await call<{ sid: string }>('POST', `/v1/accounts/${account}/events`, {
    type: 'deployment',
    name: 'bench deployment',
    bucketSids: [bucket],
    startedAt: new Date(Math.floor(Date.now() / 60_000) * 60_000 - 6 * 3_600_000).toISOString(),
  });
  if (ev.status !== 201) throw new Error(`bench event answered ${ev.status}`);
  const impactPath = `/v1/accounts/${account}/events/${ev.body.sid}/impact`;
  const first = await call<{ endpoints: unknown[] }>('GET', impactPath);
  if (first.status !== 200) throw new Error(`impact answered ${first.status}`);
  const ms: number[] = [];
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    const r = await call('GET', impactPath);
    ms.push(performance.now() - t);
    if (r.status !== 200) throw new Error(`impact answered ${r.status}`);
  }
  out.releaseImpact = timing(impactPath, ms, `${first.body.endpoints.length} endpoints`);
  log(
    `query releaseImpact (${first.body.endpoints.length} endpoints): median ${out.releaseImpact.medianMs} ms, p95 ${out.releaseImpact.p95Ms} ms`,
  );

  // 100 SLOs: half availability, half latency; half over the whole bucket, half over one endpoint.
  const sids: string[] = [];
  for (let i = 0; i < 100; i++) {
    const e = ENDPOINTS[i % ENDPOINTS.length]!;
    const r = await call<{ sid: string }>('POST', `/v1/accounts/${account}/slos`, {
      name: `bench slo ${i}`,
      bucketSid: bucket,
      environmentSid: i % 3 === 0 ? 'prod01' : null,
      endpoint: i % 4 < 2 ? e.endpoint : null,
      method: i % 4 < 2 ? e.method : null,
      sli: i % 2 === 0 ? { kind: 'availability' } : { kind: 'latency', thresholdMs: 100 },
      objective: 99.5,
      windowDays: i % 5 === 0 ? 7 : 30,
    });
    if (r.status !== 201) throw new Error(`slo create answered ${r.status}`);
    sids.push(r.body.sid);
  }
  for (const sid of sids.slice(0, 5)) await call('GET', `/v1/accounts/${account}/slos/${sid}/status`);
  const statusMs: number[] = [];
  const cpuBefore = servicePid === undefined ? NaN : cpuSeconds(servicePid);
  const wall = performance.now();
  for (const sid of sids) {
    const t = performance.now();
    const r = await call('GET', `/v1/accounts/${account}/slos/${sid}/status`);
    statusMs.push(performance.now() - t);
    if (r.status !== 200) throw new Error(`slo status answered ${r.status}`);
  }
  const passSeconds = (performance.now() - wall) / 1000;
  const cpu = servicePid === undefined ? NaN : cpuSeconds(servicePid) - cpuBefore;
  out.sloStatus = timing(
    `/v1/accounts/${account}/slos/{sid}/status x100`,
    statusMs,
    `100 SLOs in ${round(passSeconds)} s; service CPU ${cpu.toFixed(2)} s per pass = ${((100 * cpu) / 60).toFixed(1)}% of a core once a minute`,
  );
  log(
    `query sloStatus x100: median ${out.sloStatus.medianMs} ms, p95 ${out.sloStatus.p95Ms} ms; ${out.sloStatus.note}`,
  );
  return out;
}
