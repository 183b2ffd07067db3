import { readFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  compileExclusion,
  compileRedaction,
  excludedBy,
  redactRecord,
  sampleRateOf,
  type CompiledExclusion,
  type CompiledRedaction,
} from '../../sdk/node/src/rules.js';
import {
  compileCriteria,
  compileSensitive,
  excludedByCriteria,
  redactSensitiveRules,
} from '../../sdk/node/src/content-rules.js';
import { parseFieldPath } from '../../services/shared/rules.js';
import type { CapturedRecord } from '../../sdk/node/src/types.js';
import { newAccount, testEnv } from '../helpers/client.js';
import { pythonVenv, REPO, run, SDK_DIR, type PythonEnv } from '../helpers/python-venv.js';
import { tokenWithScopes } from '../helpers/tokens.js';

// The Python SDK (sdk/python, docs/sdk-python.md) in `npm test`: a cached venv (helpers/python-venv.ts),
// ruff and mypy --strict over the package and its tests, then pytest — the shared rules corpus,
// unit tests, and FastAPI (uvicorn), Flask and Django apps driven over HTTP against this stack, with
// fresh accounts made here (one per pytest test) and the stack's URLs in the environment.

interface Corpus {
  redactions: {
    name: string;
    environment: string;
    rules: Parameters<typeof compileRedaction>[0][];
    compiled: number;
    record: CapturedRecord;
    expected: CapturedRecord;
  }[];
  fieldPaths: { path: string; expected: unknown }[];
  exclusions: {
    rules: Parameters<typeof compileExclusion>[0][];
    compiled: number;
    cases: {
      method: string;
      path: string;
      status: number | null;
      environment: string;
      excludedBy: string | null;
    }[];
  }[];
  sampling: {
    sampling: Record<string, number> | null;
    bucketRate: number;
    method: string;
    endpoint: string | null;
    path: string;
    rate: number;
  }[];
  shapeA: {
    name: string;
    rules: unknown[];
    compiled: number;
    skipped: string[];
    record: CapturedRecord;
    expected: CapturedRecord;
  }[];
  criteria: {
    rules: Parameters<typeof compileCriteria>[0][number][];
    compiled: number;
    skipped: string[];
    cases: { environment: string; record: CapturedRecord; excludedBy: string | null }[];
  }[];
}

const corpus = JSON.parse(
  readFileSync(path.join(REPO, 'test/fixtures/sdk-rules-corpus.json'), 'utf8'),
) as Corpus;

/** How many accounts the pytest run gets (each stack test takes its own). */
const ACCOUNTS = 12;

describe('Python SDK: the rules corpus shared with the Node.js SDK', () => {
  it.each(corpus.redactions.map((c) => [c.name, c] as const))('redactions: %s', (_name, c) => {
    const compiled = c.rules
      .map((r) => compileRedaction(r))
      .filter((r): r is CompiledRedaction => r !== null);
    expect(compiled).toHaveLength(c.compiled);
    const record = structuredClone(c.record);
    redactRecord(record, compiled, c.environment);
    expect(record).toEqual(c.expected);
  });

  it.each(corpus.shapeA.map((c) => [c.name, c] as const))('Shape A sensitive rules: %s', (_name, c) => {
    const set = compileSensitive(c.rules);
    expect(set.compiled?.size ?? 0).toBe(c.compiled);
    expect(set.skipped.map((s) => s.sid).sort()).toEqual(c.skipped);
    const record = structuredClone(c.record);
    redactSensitiveRules(record, set);
    expect(record).toEqual(c.expected);
  });

  it('Shape A exclusion criteria', () => {
    for (const g of corpus.criteria) {
      const c = compileCriteria(g.rules);
      expect(c.rules).toHaveLength(g.compiled);
      expect(c.skipped.map((s) => s.sid).sort()).toEqual(g.skipped);
      for (const x of g.cases)
        expect([x, excludedByCriteria(c.rules, x.record, x.environment)?.sid ?? null]).toEqual([
          x,
          x.excludedBy,
        ]);
    }
  });

  it('field paths, exclusions and sampling', () => {
    // The Node.js SDK parses field paths with the server's parser (services/shared/rules.ts); the
    // corpus's paths address both bodies, so its segments are the parser's.
    for (const f of corpus.fieldPaths) {
      const r = parseFieldPath(f.path);
      expect([f.path, r.ok ? { root: r.root, segments: r.segments } : null]).toEqual([
        f.path,
        f.expected === null ? null : { root: 'bodies', segments: f.expected },
      ]);
    }
    for (const g of corpus.exclusions) {
      const compiled = g.rules
        .map((r) => compileExclusion(r))
        .filter((x): x is CompiledExclusion => x !== null);
      expect(compiled).toHaveLength(g.compiled);
      for (const x of g.cases)
        expect([x, excludedBy(compiled, x.method, x.path, x.status, x.environment)?.sid ?? null]).toEqual([
          x,
          x.excludedBy,
        ]);
    }
    for (const s of corpus.sampling)
      expect([s, sampleRateOf(s.sampling ?? undefined, s.bucketRate, s.method, s.endpoint, s.path)]).toEqual([
        s,
        s.rate,
      ]);
  });
});

describe('Python SDK: ruff, mypy --strict and pytest against the stack', () => {
  let py: PythonEnv;
  // Making the venv takes about 1-2 min on an idle 2-core machine (cached: nothing); the limit
  // leaves room for a busy one.
  beforeAll(async () => {
    py = await pythonVenv();
  }, 900_000);

  it('ruff (lint and format) and mypy --strict are clean', async () => {
    const env = { RUFF_CACHE_DIR: path.join(py.cacheDir, 'ruff') };
    const lint = await run(py.bin('ruff'), ['check', '.'], { cwd: SDK_DIR, env });
    expect(lint.code, lint.output).toBe(0);
    const format = await run(py.bin('ruff'), ['format', '--check', '.'], { cwd: SDK_DIR, env });
    expect(format.code, format.output).toBe(0);
    const mypy = await run(py.bin('mypy'), ['--cache-dir', path.join(py.cacheDir, 'mypy')], { cwd: SDK_DIR });
    expect(mypy.code, mypy.output).toBe(0);
  }, 180_000);

  it('pytest: unit tests, the shared corpus, FastAPI, Flask and Django apps against the stack', async () => {
    const accounts = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      const a = await newAccount();
      accounts.push({
        accountSid: a.accountSid,
        bucketSid: a.bucketSid,
        apiToken: a.apiToken,
        // The SDK gets what a deployment gives it: an ingest-only token.
        ingestToken: await tokenWithScopes(a, ['requests:write']),
      });
    }
    const res = await run(py.bin('pytest'), ['-q', '-ra'], {
      cwd: SDK_DIR,
      env: {
        TAPLINE_TEST_API_URL: testEnv().apiUrl,
        TAPLINE_TEST_INGEST_URL: testEnv().ingestUrl,
        TAPLINE_TEST_ACCOUNTS: JSON.stringify(accounts),
      },
      timeoutMs: 280_000,
    });
    expect(res.code, res.output).toBe(0);
    // Every test ran and passed: no skips, no deselection.
    expect(res.output).toMatch(/\d+ passed/);
    expect(res.output).not.toMatch(/skipped|xfail|deselected/);
  }, 300_000);
});
