/**
 * The processor's CPU per record, two builds compared in one process:
 *
 *   npx tsx test/bench/processor-ab.ts DIR_A DIR_B [records per round = 20000] [rounds = 12]
 *
 * DIR_A and DIR_B are working trees with a compiled `dist/` (`npx tsc -b tsconfig.build.json`).
 * Each round makes its own records (test/bench/records.ts) and runs both builds' path over them
 * (parse, steps, the sink's encoder, row, RowBinary), the build that goes first alternating from
 * round to round, without rules and with the ten predefined sensitive-data types. Interleaving
 * the rounds cancels the machine's drift between separate runs, which on a shared 2-core machine
 * is larger than the differences looked for. It prints each build's median µs per record and the
 * per-round ratios (B / A). A build from before the sink's encoder (no record-encoder.js) is run
 * through its sink's `keptText`.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ingestRecord, rng } from './records.js';
const [dirA, dirB] = [process.argv[2]!, process.argv[3]!];
const N = Number(process.argv[4] ?? 20000),
  ROUNDS = Number(process.argv[5] ?? 12);
async function load(root: string) {
  const d = (rel: string) =>
    import(pathToFileURL(path.join(root, 'dist/services/processor', rel + '.js')).href);
  const [compiled, pipeline, snapshot, row, steps, enc, sink, sens] = await Promise.all([
    d('compiled-rules'),
    d('pipeline'),
    d('rule-snapshot'),
    d('row.mapper'),
    d('steps/index'),
    d('record-encoder').catch(() => ({})),
    d('requests.sink'),
    d('sensitive/index'),
  ]);
  const r = snapshot.emptyRules('acc_bench', 'Bench');
  r.sensitiveRedactions = sens.PREDEFINED_TYPES.map((type: string, i: number) => ({
    sid: `rdc_bench${i}`,
    accountSid: 'acc_bench',
    type,
    pattern: null,
    applyTo: null,
    level: 'full',
    scopes: ['*'],
    buckets: null,
    environments: null,
  }));
  const ctxs = {
    none: pipeline.baseContext('acc_bench', 'bkt_bench'),
    rules: {
      accountSid: 'acc_bench',
      bucketSid: 'bkt_bench',
      rules: compiled.compileProcessorRules(r).forBucket('bkt_bench'),
    },
  };
  const spreadReceived = !enc.encodeKept;
  return (lines: { text: string; buf: Buffer }[], which: 'none' | 'rules') => {
    const ctx = ctxs[which];
    const rows: unknown[] = [];
    const checkLine = enc.rulesReadContent ? enc.rulesReadContent(ctx.rules) : false;
    const c0 = process.cpuUsage();
    for (const line of lines) {
      const record = JSON.parse(line.text);
      const received = spreadReceived ? { ...record } : Object.assign({}, record);
      record.accountSid = ctx.accountSid;
      record.bucketSid = ctx.bucketSid;
      const res = pipeline.runSteps(record, ctx, steps.PROCESSOR_STEPS);
      if (res.kind === 'drop' || res.kind === 'dlq' || res.kind === 'exclude') continue;
      const text = enc.encodeKept
        ? enc.encodeKept({ line: line.buf, received }, res.record, checkLine)
        : sink.keptText(res, { line: line.buf, received });
      rows.push(row.toRow(res.record, 0, 0, text));
      if (rows.length === 100) row.rowBinary(rows.splice(0));
    }
    if (rows.length) row.rowBinary(rows);
    const u = process.cpuUsage(c0);
    return (u.user + u.system) / lines.length;
  };
}
function lines(n: number, seed: number) {
  const r = rng(seed);
  const now = Date.now();
  return Array.from({ length: n }, (_, i) => {
    const text = JSON.stringify({
      ...ingestRecord(r, { environments: ['prod01', 'stag01', 'dev001'], now }),
      sid: `req_bench${String(seed).padStart(4, '0')}${String(i).padStart(18, '0')}`,
      receivedAt: new Date(now).toISOString(),
    });
    return { text, buf: Buffer.from(text) };
  });
}
const [A, B] = [await load(dirA), await load(dirB)];
const med = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
for (const which of ['none', 'rules'] as const) {
  const a: number[] = [],
    b: number[] = [],
    ratio: number[] = [];
  for (let round = 0; round < ROUNDS + 2; round++) {
    const set = lines(N, 42 + round);
    const first = round % 2 === 0;
    const x = first ? A(set, which) : B(set, which);
    const y = first ? B(set, which) : A(set, which);
    const [ua, ub] = first ? [x, y] : [y, x];
    if (round >= 2) {
      a.push(ua);
      b.push(ub);
      ratio.push(ub / ua);
    }
  }
  console.log(
    JSON.stringify({
      which,
      A: +med(a).toFixed(1),
      B: +med(b).toFixed(1),
      ratioMedian: +med(ratio).toFixed(3),
      ratios: ratio.map((r) => +r.toFixed(2)),
    }),
  );
}
