/**
 * Processor CPU cost of the rules: records/s through the pipeline steps (exclusions, redaction,
 * endpoint template, request/error triggers) with 0, 10 and 100 active rules per account, in
 * process, no I/O. Also with the row mapping (JSON serialisation of the stored record) that every
 * stored record costs anyway, to show the rules' share of the per-record work.
 *
 *   npx tsx test/bench/rules-throughput.ts [records=20000] [rounds=5]
 *
 * NOTE: under tsx every closure pays esbuild's keepNames helper; for figures close to the built
 * service, bundle first: `npx esbuild test/bench/rules-throughput.ts --bundle --platform=node
 * --format=esm --packages=external --outfile=/tmp/rules-bench.mjs && node /tmp/rules-bench.mjs`.
 *
 * Records are ~1.4 KB like the ingest bench: JSON string bodies with nested objects and arrays,
 * a dozen headers, a query string. Rule mix per account: 40% exclusions (patterns of every form,
 * matching ~10% of the traffic in total), 40% server-side redactions (body fields, array wildcards,
 * `$..` descents, headers, query parameters), 20% request/error workflows.
 */
import { compileProcessorRules, type BucketRules } from '../../services/processor/compiled-rules.js';
import { runSteps, type StoredRecord } from '../../services/processor/pipeline.js';
import { emptyRules, type AccountRules, type RedactionType } from '../../services/processor/rule-snapshot.js';
import { PROCESSOR_STEPS } from '../../services/processor/steps/index.js';
import { toRow } from '../../services/processor/row.mapper.js';

const N = Number(process.argv[2] ?? 20_000);
const ROUNDS = Number(process.argv[3] ?? 5);
const ACCOUNT = 'acc_bench000000000000000000000000';
const BUCKET = 'bkt_bench000000000000000000000000';

const PATHS = [
  '/users/{n}/orders',
  '/orders/{n}',
  '/static/app.{n}.js',
  '/health',
  '/api/v2/items/{n}/reviews',
];
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS'];

function record(i: number): StoredRecord {
  const path = PATHS[i % PATHS.length]!.replace('{n}', String(1000 + i));
  const method = METHODS[i % METHODS.length]!;
  const status = i % 17 === 0 ? 500 : i % 11 === 0 ? 404 : 200;
  return {
    sid: `req_bench${String(i).padStart(22, '0')}`,
    accountSid: ACCOUNT,
    bucketSid: BUCKET,
    environmentSid: 'prod01',
    contextSid: null,
    direction: 'in',
    createdAt: new Date(1_790_000_000_000 + i).toISOString(),
    receivedAt: new Date(1_790_000_000_000 + i).toISOString(),
    firewall: { blocked: false },
    request: {
      host: 'api.example.com',
      method,
      path,
      port: 443,
      url: `https://api.example.com${path}?page=2&apiKey=k${i}&sort=desc`,
      queryString: { page: '2', apiKey: `k${i}`, sort: 'desc' },
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer tok_${i}_abcdefghijklmnop`,
        'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) bench',
        accept: 'application/json',
        'accept-encoding': 'gzip, deflate, br',
        'x-request-id': `b${i}-4c1e-9a77-5d2e0b9f8a11`,
        'x-forwarded-for': '203.0.113.7',
        cookie: `session=s${i}; theme=dark`,
      },
      body: JSON.stringify({
        user: {
          id: i,
          email: `user${i}@example.test`,
          password: `pw-${i}`,
          profile: { phone: '+1 555 0100' },
        },
        card: { number: '4111-1111-1111-1111', cvv: '123', expiry: '12/30' },
        items: [
          { sku: `SKU-${i}`, qty: 1, price: 9.99, serial: `SN-${i}-A` },
          { sku: `SKU-${i + 1}`, qty: 2, price: 19.5, serial: `SN-${i}-B` },
        ],
        note: 'please deliver between 9 and 5',
      }),
      contentType: 'application/json',
      size: 420,
    },
    response: {
      statusCode: status,
      headers: { 'content-type': 'application/json', 'set-cookie': [`sid=${i}`, 'a=b'], 'x-trace': `t${i}` },
      body: JSON.stringify({
        ok: status < 400,
        id: i,
        token: `secret-${i}`,
        data: { list: [1, 2, 3], password: 'x' },
      }),
      contentType: 'application/json',
      size: 160,
    },
    timings: { duration: 12.5 + (i % 50) },
  };
}

const EXCLUSION_PATTERNS = ['/health', '/static*', '*/reviews', '/users/*/orders', '/api/*/items/*/x*', '*'];
const REDACTIONS: [string, RedactionType][] = [
  ['$.request.body.card.number', 'mask'],
  ['$.request.body.card.cvv', 'remove'],
  ['$.request.body.items[*].serial', 'hash'],
  ['$..password', 'replace'],
  ['$.request.headers.authorization', 'mask'],
  ['$.request.queryString.apiKey', 'remove'],
  ['$.response.body.token', 'hash'],
  ['$.response.headers.set-cookie', 'mask'],
  ['$.request.body.user.email', 'hash'],
  ['$.request.headers.cookie', 'remove'],
];

function rules(count: number): AccountRules {
  const r = emptyRules(ACCOUNT, 'Bench');
  r.bucketNames.set(BUCKET, 'bench');
  const nx = Math.round(count * 0.4);
  const nr = Math.round(count * 0.4);
  const nw = count - nx - nr;
  for (let i = 0; i < nx; i++) {
    // Mostly non-matching variants so ~10% of the traffic is excluded whatever the count.
    const base = EXCLUSION_PATTERNS[i % EXCLUSION_PATTERNS.length]!;
    const pattern = i === 0 ? '/health' : base === '*' ? `/nomatch${i}*` : `${base}-v${i}`;
    r.exclusions.push({
      sid: `xcl_${i}`,
      accountSid: ACCOUNT,
      name: `x${i}`,
      pathPattern: pattern,
      method: i % 3 === 0 ? '*' : 'GET',
      statusCode: i % 4 === 0 ? 200 : null,
      buckets: null,
      environments: i % 5 === 0 ? ['prod01', 'stag01'] : null,
    });
  }
  for (let i = 0; i < nr; i++) {
    const [path, redactionType] = REDACTIONS[i % REDACTIONS.length]!;
    // Beyond the first ten, distinct rules for fields most records do not have (as in real accounts).
    const fieldPath = i < REDACTIONS.length ? path : `${path}_${i}`;
    r.redactions.push({
      sid: `rdc_${i}`,
      accountSid: ACCOUNT,
      name: `r${i}`,
      fieldPath,
      redactionType,
      replacementValue: redactionType === 'replace' ? '[x]' : null,
      buckets: null,
      environments: null,
    });
  }
  for (let i = 0; i < nw; i++) {
    r.workflows.push({
      sid: `wfl_${i}`,
      accountSid: ACCOUNT,
      environmentSid: 'prod01',
      bucketSid: BUCKET,
      name: `w${i}`,
      description: '',
      trigger:
        i % 2 === 0
          ? { type: 'error', conditions: [{ statusCode: 500 }] }
          : { type: 'request', conditions: [{ path: `/orders/*`, method: 'DELETE' }] },
      actions: [],
      createdAt: new Date(0).toISOString(),
      updatedAt: null,
    });
  }
  return r;
}

/**
 * The same record with its body keys renamed so no redaction rule addresses them (most traffic of
 * a real account): shows the cost when bodies are checked but need no parse.
 */
function plainRecord(i: number): StoredRecord {
  const r = record(i);
  const rename = (s: unknown) =>
    typeof s === 'string'
      ? s.replace(
          /"(user|email|password|card|number|cvv|items|serial|token)"/g,
          (_m, k: string) => `"${k}_x"`,
        )
      : s;
  r.request.body = rename(r.request.body);
  r.response!.body = rename(r.response!.body);
  return r;
}

function measure(
  bucketRules: BucketRules,
  withRow: boolean,
  make: (i: number) => StoredRecord = record,
): { rps: number; stored: number; jobs: number } {
  const source = Array.from({ length: N }, (_, i) => JSON.stringify(make(i)));
  const ctx = { accountSid: ACCOUNT, bucketSid: BUCKET, rules: bucketRules };
  const rates: number[] = [];
  let stored = 0;
  let jobs = 0;
  // Round 0 warms the JIT and is not counted.
  for (let round = 0; round <= ROUNDS; round++) {
    // Parsing is outside the timing: the consumer parses each message once whatever the rules.
    const records = source.map((s) => JSON.parse(s) as StoredRecord);
    stored = 0;
    jobs = 0;
    // CPU time of this process, not wall time: the development VM is shared, and a busy
    // neighbour would otherwise halve the figure.
    const c0 = process.cpuUsage();
    for (let i = 0; i < records.length; i++) {
      const res = runSteps(records[i]!, ctx, PROCESSOR_STEPS);
      if (res.kind === 'ok') {
        stored++;
        jobs += res.jobs?.length ?? 0;
        if (withRow) toRow(res.record, 0, i);
      }
    }
    const used = process.cpuUsage(c0);
    const ms = (used.user + used.system) / 1000;
    if (round > 0) rates.push((records.length / ms) * 1000);
  }
  rates.sort((a, b) => a - b);
  return { rps: Math.round(rates[Math.floor(rates.length / 2)]!), stored, jobs };
}

console.log(
  `records=${N} rounds=${ROUNDS} (median round, per CPU-second of one core), node ${process.version}`,
);
console.log('rules | steps, sensitive bodies | steps, plain bodies | steps + row mapping | stored | jobs');
for (const count of [0, 10, 100]) {
  const compiled = compileProcessorRules(rules(count)).forBucket(BUCKET);
  const steps = measure(compiled, false);
  const plain = measure(compiled, false, plainRecord);
  const full = measure(compiled, true);
  console.log(
    [
      String(count).padStart(5),
      String(steps.rps).padStart(23),
      String(plain.rps).padStart(19),
      String(full.rps).padStart(19),
      steps.stored,
      steps.jobs,
    ].join(' | '),
  );
}
