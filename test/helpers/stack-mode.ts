import fs from 'node:fs';

/**
 * RETENTION_DAYS of the integration stack: longer than any month plus a day, so a test can always
 * place records on both sides of a real month boundary inside the retention (with 30 days there is
 * none on the 31st of a month). Tests of the retention window read it from here.
 */
export const TEST_RETENTION_DAYS = 35;

/** How the tests get Kafka, Postgres and ClickHouse: containers where Docker answers, else local. */
export type TestStackMode = 'containers' | 'local';

/**
 * The test stack's mode: TEST_STACK=containers|local when set, otherwise `containers` when a
 * Docker engine is reachable (DOCKER_HOST or the default socket) and `local` (infra/local) when not.
 */
export function testStackMode(env: NodeJS.ProcessEnv = process.env): {
  mode: TestStackMode;
  why: string;
} {
  if (env.TEST_STACK === 'containers' || env.TEST_STACK === 'local')
    return { mode: env.TEST_STACK, why: 'TEST_STACK' };
  if (env.TEST_STACK) throw new Error(`TEST_STACK must be containers or local, not ${env.TEST_STACK}`);
  if (env.DOCKER_HOST) return { mode: 'containers', why: `DOCKER_HOST=${env.DOCKER_HOST}` };
  if (fs.existsSync('/var/run/docker.sock')) return { mode: 'containers', why: '/var/run/docker.sock' };
  return { mode: 'local', why: 'no Docker engine' };
}
