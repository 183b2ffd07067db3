/**
 * Bench query set by range: every call the dashboard's pages and the stream's searches make, for
 * the last hour, 24 hours, 7 days and 30 days, against a large stored set (bench.ts's query phase;
 * `--large-days 30` spreads the set over a month). A page's figure is the time until all the calls
 * it fires at once have answered, as a person waits for them; each round is timed `rounds` times
 * after two unmeasured ones (caches and JIT, as a dashboard already open). Each figure is printed
 * with its target and the ratio to it (bench/README.md, "Query sets by range").
 */
import { performance } from 'node:perf_hooks';

type Call = <T>(method: string, p: string, body?: unknown) => Promise<{ status: number; body: T }>;

export const RANGES = { '1h': 3_600_000, '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 };
export type RangeName = keyof typeof RANGES;

export interface RangeTiming {
  p50Ms: number;
  p95Ms: number;
  targetMs: number;
  /** p95 ÷ target: at most 1 meets the target */
  ratio: number;
  /** what the first answer held (rows, records), to tell an empty answer from a fast one */
  answered: string;
}

/** What the set holds that the searches and the endpoint page name. */
export interface RangeSubject {
  /** one endpoint template and its method (the endpoint page) */
  endpoint: string;
  method: string;
  /** a path prefix whose records include slow ones */
  pathPrefix: string;
  /** one concrete path of the set */
  exactPath: string;
  host: string;
  tag: string;
  word: string;
  /** a consumer id, when the set's records carry consumers */
  consumer?: string;
}

/** The interval the dashboard picks for a range (web/src/lib/time.ts). */
const intervalFor = (span: number) =>
  span <= 6 * 3_600_000 ? 'minute' : span <= 8 * 86_400_000 ? 'hour' : 'day';

const quantile = (xs: number[], q: number) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
const round = (v: number) => Math.round(v * 10) / 10;

interface Round {
  paths: string[];
  targetMs: number;
}

/** The calls of each page and search for one range, as the dashboard makes them. */
export function rangeCalls(account: string, bucket: string, s: RangeSubject, range: RangeName) {
  const span = RANGES[range];
  const end = Math.ceil(Date.now() / 60_000) * 60_000;
  const iv = intervalFor(span);
  const q = (params: Record<string, string | number | boolean>) =>
    new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)])).toString();
  const scope = (from: number, to: number) => ({
    bucketSid: bucket,
    startDate: new Date(from).toISOString(),
    endDate: new Date(to).toISOString(),
  });
  const cur = scope(end - span, end);
  const prev = scope(end - 2 * span, end - span);
  const m = `/v1/accounts/${account}/metrics`;
  const one = { ...cur, endpoint: s.endpoint, method: s.method };
  const requests = `/v1/accounts/${account}/buckets/${bucket}/requests`;
  // The stream's list: newest first, a range that ends now has no end date.
  const stream = (search?: string) =>
    `${requests}?${q({ sort: 'createdAt', order: 'desc', limit: 50, startDate: cur.startDate, ...(search ? { q: search } : {}) })}`;
  const searchTarget = span <= RANGES['24h'] ? 1000 : 3000;
  const searches: Record<string, string> = {
    searchStatusClass: 'status:5xx',
    searchPathPrefixDuration: `path:${s.pathPrefix}* duration:>2000`,
    searchExactPath: `path:${s.exactPath}`,
    searchHost: `host:${s.host}`,
    searchTag: `tag:${s.tag}`,
    searchWord: s.word,
    ...(s.consumer ? { searchConsumer: `consumer:${s.consumer}` } : {}),
  };
  const rounds: Record<string, Round> = {
    overview: {
      paths: [
        `${m}/shapeA/summary?${q(cur)}`,
        `${m}/shapeA/throughput?${q({ ...cur, interval: iv, averageUnits: 'rpm' })}`,
        `${m}/shapeA/responseTime?${q({ ...cur, interval: iv })}`,
        `${m}/shapeA/throughput?${q({ ...prev, interval: iv, averageUnits: 'rpm' })}`,
        `${m}/shapeA/responseTime?${q({ ...prev, interval: iv })}`,
      ],
      targetMs: 500,
    },
    endpoints: {
      paths: [`${m}/performance?${q({ ...cur, groupBy: 'route', limit: 1000, interval: iv })}`],
      targetMs: 500,
    },
    endpointPage: {
      paths: [
        `${m}/shapeA/throughput?${q({ ...one, interval: iv, averageUnits: 'rpm' })}`,
        `${m}/shapeA/responseTime?${q({ ...one, interval: iv })}`,
        `${m}/performance?${q({ ...one, groupBy: 'status', limit: 100 })}`,
        `${m}/performance?${q({ ...one, groupBy: 'endpoint', limit: 1, histogram: true })}`,
      ],
      targetMs: 500,
    },
    errors: {
      paths: [
        `${m}/shapeA/throughput?${q({ ...cur, interval: iv, averageUnits: 'rpm' })}`,
        `${m}/errors?${q({ ...cur, limit: 200 })}`,
      ],
      targetMs: 500,
    },
    streamFirstPage: { paths: [stream()], targetMs: 300 },
    ...Object.fromEntries(
      Object.entries(searches).map(([name, search]) => [
        name,
        { paths: [stream(search)], targetMs: searchTarget },
      ]),
    ),
  };
  return rounds;
}

/** How much a first answer held: rows of a list, records of a page, periods of a series. */
function held(body: unknown): string {
  const b = body as Record<string, unknown>;
  for (const k of ['records', 'metrics', 'periods', 'errors', 'endpoints']) {
    if (Array.isArray(b?.[k])) return `${(b[k] as unknown[]).length} ${k}`;
  }
  return 'answered';
}

/** Times every page and search of every range; `log` gets one line per figure. */
export async function timeRangeQueries(
  call: Call,
  account: string,
  bucket: string,
  subject: RangeSubject,
  rounds: number,
  log: (s: string) => void,
): Promise<Record<RangeName, Record<string, RangeTiming>>> {
  const out = {} as Record<RangeName, Record<string, RangeTiming>>;
  for (const range of Object.keys(RANGES) as RangeName[]) {
    out[range] = {};
    for (const [name, r] of Object.entries(rangeCalls(account, bucket, subject, range))) {
      const once = () => Promise.all(r.paths.map((p) => call<unknown>('GET', p)));
      const first = await once();
      const bad = first.find((x) => x.status !== 200);
      if (bad) throw new Error(`${range} ${name} answered ${bad.status}: ${JSON.stringify(bad.body)}`);
      for (let i = 0; i < 2; i++) await once();
      const ms: number[] = [];
      for (let i = 0; i < rounds; i++) {
        const t = performance.now();
        await once();
        ms.push(performance.now() - t);
      }
      ms.sort((x, y) => x - y);
      const p95 = round(quantile(ms, 0.95));
      const timing: RangeTiming = {
        p50Ms: round(quantile(ms, 0.5)),
        p95Ms: p95,
        targetMs: r.targetMs,
        ratio: Math.round((p95 / r.targetMs) * 100) / 100,
        answered: held(first[first.length - 1]!.body),
      };
      out[range][name] = timing;
      log(
        `range ${range} ${name}: p50 ${timing.p50Ms} ms, p95 ${p95} ms (${timing.ratio} of ${r.targetMs}; ${timing.answered})`,
      );
    }
  }
  return out;
}

/** The figures as a table: one row per call, p50 / p95 (ratio) per range. */
export function rangeTable(set: string, figures: Record<RangeName, Record<string, RangeTiming>>): string {
  const ranges = Object.keys(figures) as RangeName[];
  const names = [...new Set(ranges.flatMap((r) => Object.keys(figures[r])))];
  const lines = [
    `| ${set}: call, p50 / p95 ms (p95 ÷ target) | ${ranges.join(' | ')} |`,
    `|---|${ranges.map(() => '---').join('|')}|`,
  ];
  for (const n of names) {
    const cells = ranges.map((r) => {
      const t = figures[r][n];
      return t ? `${t.p50Ms} / ${t.p95Ms} (${t.ratio.toFixed(2)} of ${t.targetMs})` : '–';
    });
    lines.push(`| ${n} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}
