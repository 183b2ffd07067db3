/**
 * `npm run fuzz [-- options]`: Schemathesis against the generated OpenAPI document with a valid
 * token. Starts its own stack (Kafka, Postgres, the service with chDB) on free ports, or reuses a
 * running one (FUZZ_API_URL + FUZZ_DATABASE_URL), seeds an account with one resource of each kind,
 * pins the path parameters to those resources (so operations reach their handlers instead of
 * stopping at a 404), runs Schemathesis and prints the request count. Exit code: Schemathesis's.
 *
 * Options: --max-examples N (per operation, default 15), --workers N (default 2), --seed N,
 * --phases a,b (default examples,coverage,fuzzing), --checks a,b (default
 * not_a_server_error,response_schema_conformance; `all` for every check), --keep (start the stack, seed, print the
 * environment and wait for Ctrl-C instead of fuzzing), any other argument goes to Schemathesis.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { startLocalStack, type LocalStack } from '../../infra/local/stack.js';
import { createAccount } from '../../services/api/accounts/accounts.service.js';
import { parseConfig } from '../../services/shared/config.js';
import { freePort, ROOT, startService, type ServiceProcess } from '../helpers/service-process.js';
import { seedResources, type SeededAccount } from './seed.js';

interface Options {
  maxExamples: number;
  workers: number;
  seed?: string;
  phases: string;
  checks: string;
  keep: boolean;
  extra: string[];
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    maxExamples: 15,
    workers: 2,
    phases: 'examples,coverage,fuzzing',
    checks: 'not_a_server_error,response_schema_conformance',
    keep: false,
    extra: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--max-examples') o.maxExamples = Number(next());
    else if (a === '--workers') o.workers = Number(next());
    else if (a === '--seed') o.seed = next();
    else if (a === '--phases') o.phases = next();
    else if (a === '--checks') o.checks = next();
    else if (a === '--keep') o.keep = true;
    else o.extra.push(a);
  }
  if (!Number.isInteger(o.maxExamples) || o.maxExamples < 1) throw new Error('--max-examples must be >= 1');
  return o;
}

const VENV = path.join(ROOT, '.cache', 'venv');
const SCHEMATHESIS = path.join(VENV, 'bin', 'schemathesis');

/** Schemathesis in a project-local venv, installed from PyPI the first time. */
export function ensureSchemathesis(): string {
  if (fs.existsSync(SCHEMATHESIS)) return SCHEMATHESIS;
  console.log(`installing Schemathesis into ${VENV}`);
  const run = (cmd: string, args: string[]) => {
    const r = spawnSync(cmd, args, { stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status})`);
  };
  run('python3', ['-m', 'venv', VENV]);
  run(path.join(VENV, 'bin', 'pip'), ['install', '--quiet', 'schemathesis>=4,<5']);
  return SCHEMATHESIS;
}

interface Stack {
  apiUrl: string;
  ingestUrl: string;
  databaseUrl: string;
  serviceLog?: string;
  stop(): Promise<void>;
}

async function startStack(runDir: string): Promise<Stack> {
  const reuseApi = process.env.FUZZ_API_URL;
  const reuseDb = process.env.FUZZ_DATABASE_URL;
  if (reuseApi && reuseDb) {
    return {
      apiUrl: reuseApi.replace(/\/$/, ''),
      ingestUrl: (process.env.FUZZ_INGEST_URL ?? '').replace(/\/$/, ''),
      databaseUrl: reuseDb,
      stop: async () => undefined,
    };
  }
  const ports = {
    PORT: await freePort(),
    INGEST_PORT: await freePort(),
    KAFKA_PORT: await freePort(),
    KAFKA_CONTROLLER_PORT: await freePort(),
    PG_PORT: await freePort(),
  };
  const cfg = parseConfig({
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
    DATA_DIR: runDir,
    CACHE_DIR: path.join(ROOT, '.cache'),
  });
  const stack: LocalStack = await startLocalStack(cfg, pino({ level: 'warn' }));
  const serviceLog = path.join(runDir, 'service.log');
  let service: ServiceProcess;
  try {
    service = await startService(
      {
        PORT: String(ports.PORT),
        INGEST_PORT: String(ports.INGEST_PORT),
        DATA_DIR: runDir,
        KAFKA_BROKERS: stack.kafkaBrokers.join(','),
        DATABASE_URL: stack.databaseUrl,
        PROCESSOR_FLUSH_MS: '100',
        PROCESSOR_HOLD_MS: '500',
      },
      serviceLog,
    );
  } catch (err) {
    await stack.stop();
    throw err;
  }
  return {
    apiUrl: service.apiUrl,
    ingestUrl: service.ingestUrl,
    databaseUrl: stack.databaseUrl,
    serviceLog,
    stop: async () => {
      await service.stop('SIGTERM');
      await stack.stop();
      // The stores are throwaway; the report, the config and the service log stay for reading.
      if (!process.env.KEEP_FUZZ_DATA) {
        for (const dir of ['chdb', 'kafka', 'postgres'])
          fs.rmSync(path.join(runDir, dir), { recursive: true, force: true });
        // As root from a folder the postgres user cannot enter, pgdata is staged outside runDir.
        const pgdata = stack.postgres?.pgdata;
        if (pgdata && !pgdata.startsWith(runDir + path.sep))
          fs.rmSync(path.dirname(pgdata), { recursive: true, force: true });
      }
    },
  };
}

/** A fresh account (SQL, like `npm run admin -- create-account`) with one resource of each kind. */
async function seed(stack: Stack): Promise<SeededAccount> {
  const pool = new pg.Pool({ connectionString: stack.databaseUrl, max: 2 });
  const tag = Date.now().toString(36);
  try {
    const acct = await createAccount(pool, {
      name: `Fuzz ${tag}`,
      email: `fuzz-${tag}@example.test`,
      bucketName: `fuzz-${tag}`,
      plan: 'enterprise',
      rateLimit: 100_000_000,
    });
    return await seedResources(
      { apiUrl: stack.apiUrl, ingestUrl: stack.ingestUrl || undefined },
      { accountSid: acct.accountSid, bucketSid: acct.bucketSid!, token: acct.apiToken },
    );
  } finally {
    await pool.end();
  }
}

const BUCKET_DELETE = 'DELETE /v1/accounts/{accountSid}/buckets/{bucketSid}';

function tomlString(s: string): string {
  return JSON.stringify(s);
}

/**
 * Schemathesis configuration: the API token, path parameters pinned to the seeded resources,
 * DELETE operations pinned to the spare ones, and the MCP token for `/mcp`.
 */
function writeConfig(file: string, seeded: SeededAccount) {
  const { bucketSid, ...others } = seeded.spare;
  const lines: string[] = [
    // The API token goes here rather than in `-H`: a CLI header would override the MCP block below.
    `headers = { Authorization = ${tomlString(`Bearer ${seeded.token}`)} }`,
    '',
    '[parameters]',
  ];
  for (const [k, v] of Object.entries(seeded.params)) lines.push(`"path.${k}" = ${tomlString(v)}`);
  // NOTE: every matching [[operations]] block applies; only the bucket DELETE gets the spare
  // bucket, the other DELETEs keep the pinned bucket (their resources live there).
  lines.push('', '[[operations]]', 'include-method = "DELETE"', '[operations.parameters]');
  for (const [k, v] of Object.entries(others)) lines.push(`"path.${k}" = ${tomlString(v)}`);
  lines.push('', '[[operations]]', `include-name = ${tomlString(BUCKET_DELETE)}`, '[operations.parameters]');
  lines.push(`"path.bucketSid" = ${tomlString(bucketSid ?? '')}`);
  // /mcp takes MCP tokens only.
  lines.push('', '[[operations]]', 'include-path = "/mcp"');
  lines.push(`headers = { Authorization = ${tomlString(`Bearer ${seeded.mcpToken}`)} }`);
  fs.writeFileSync(file, lines.join('\n') + '\n');
}

/** Requests sent, from the NDJSON event stream (one interaction per request). */
function countRequests(ndjson: string): number {
  if (!fs.existsSync(ndjson)) return -1;
  let n = 0;
  for (const line of fs.readFileSync(ndjson, 'utf8').split('\n')) {
    if (!line) continue;
    const ev = JSON.parse(line) as Record<string, unknown>;
    const scenario = ev.ScenarioFinished as
      { recorder?: { interactions?: Record<string, unknown> } } | undefined;
    if (scenario?.recorder?.interactions) n += Object.keys(scenario.recorder.interactions).length;
  }
  return n;
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const bin = ensureSchemathesis();
  const runDir = path.join(ROOT, '.cache', 'fuzz-runs', `${Date.now()}-${process.pid}`);
  fs.mkdirSync(runDir, { recursive: true });
  const t0 = Date.now();
  const stack = await startStack(runDir);
  let code = 1;
  try {
    const seeded = await seed(stack);
    const { token, params } = seeded;
    const configFile = path.join(runDir, 'schemathesis.toml');
    writeConfig(configFile, seeded);
    if (opts.keep) {
      console.log(
        JSON.stringify(
          {
            apiUrl: stack.apiUrl,
            ingestUrl: stack.ingestUrl,
            databaseUrl: stack.databaseUrl,
            token,
            params,
            configFile,
            serviceLog: stack.serviceLog,
          },
          null,
          2,
        ),
      );
      await new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
      code = 0;
      return;
    }
    console.log(`stack ready in ${((Date.now() - t0) / 1000).toFixed(1)} s; fuzzing ${stack.apiUrl}`);
    const reportDir = path.join(runDir, 'report');
    const args = [
      '--config-file',
      configFile,
      'run',
      `${stack.apiUrl}/v1/openapi.json`,
      '--url',
      stack.apiUrl,
      '--checks',
      opts.checks,
      '--max-examples',
      String(opts.maxExamples),
      '--workers',
      String(opts.workers),
      '--phases',
      opts.phases,
      '--generation-database',
      'none',
      '--request-timeout',
      '10',
      '--continue-on-failure',
      '--report',
      'ndjson',
      '--report-dir',
      reportDir,
      '--no-color',
      ...(opts.seed ? ['--seed', opts.seed] : []),
      ...opts.extra,
    ];
    const t1 = Date.now();
    code = await new Promise<number>((resolve) => {
      const child = spawn(bin, args, { stdio: 'inherit', cwd: runDir });
      child.on('exit', (c) => resolve(c ?? 1));
    });
    const ndjson = fs.readdirSync(reportDir).find((f) => f.endsWith('.ndjson'));
    const requests = ndjson ? countRequests(path.join(reportDir, ndjson)) : -1;
    // The service's own view: every 5xx is logged as `request failed`.
    const failedInLog = stack.serviceLog
      ? fs
          .readFileSync(stack.serviceLog, 'utf8')
          .split('\n')
          .filter((l) => l.includes('"msg":"request failed"')).length
      : undefined;
    if (failedInLog !== undefined) console.log(`service log: ${failedInLog} requests failed with a 5xx`);
    console.log(
      `fuzz: ${requests} requests in ${((Date.now() - t1) / 1000).toFixed(1)} s, exit code ${code}` +
        ` (report: ${reportDir}${stack.serviceLog ? `, service log: ${stack.serviceLog}` : ''})`,
    );
  } finally {
    await stack.stop();
    process.exitCode = code;
  }
}

await main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
