import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { TOPICS } from '../../services/shared/topics.js';

/**
 * Issue 14 point 13: the Docker image starts without a demo account, and docker-compose's Kafka
 * keeps records as long as the local stack's broker (infra/local/kafka.launcher.ts); both the
 * retention and the dead-letter topics are documented (docs/reliability.md).
 */
const ROOT = process.cwd();
const read = (f: string) => fs.readFileSync(path.join(ROOT, f), 'utf8');

/** A broker property as the local launcher sets it: `['log.retention.hours', 24]`. */
function launcherProp(name: string): string {
  const m = new RegExp(`\\['${name.replace(/\./g, '\\.')}',\\s*([^\\]]+)\\]`).exec(
    read('infra/local/kafka.launcher.ts'),
  );
  if (!m) throw new Error(`${name} is not set in kafka.launcher.ts`);
  return m[1]!.trim();
}

/** A variable of the kafka service in docker-compose.yml. */
function composeKafkaEnv(name: string): string | undefined {
  const compose = read('docker-compose.yml');
  const kafka = compose.slice(compose.indexOf('\n  kafka:'), compose.indexOf('\n  postgres:'));
  const m = new RegExp(`^\\s+${name}:\\s*'?([^'\\n]+)'?$`, 'm').exec(kafka);
  return m?.[1]?.trim();
}

describe('deployment configuration', () => {
  it('the Docker image has DEMO_ACCOUNT off', () => {
    const runtime = read('Dockerfile')
      .split(/^FROM /m)
      .pop()!;
    expect(runtime).toMatch(/^ENV\b.*\bDEMO_ACCOUNT=false\b/m);
  });

  it('docker-compose sets the local broker retention on Kafka', () => {
    expect(composeKafkaEnv('KAFKA_LOG_RETENTION_HOURS')).toBe(launcherProp('log.retention.hours'));
    expect(composeKafkaEnv('KAFKA_LOG_ROLL_HOURS')).toBe(launcherProp('log.roll.hours'));
    expect(composeKafkaEnv('KAFKA_LOG_SEGMENT_BYTES')).toBe(String(64 * 1024 * 1024));
  });

  it('docs/reliability.md documents the dead-letter topics and the retention', () => {
    const doc = read('docs/reliability.md');
    expect(doc).toContain(TOPICS.requestsDlq);
    expect(doc).toContain(TOPICS.actionsDlq);
    expect(doc).toMatch(/KAFKA_LOG_RETENTION_HOURS/);
    expect(doc).toMatch(/log\.retention\.hours/);
  });
});
