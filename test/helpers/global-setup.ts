import type { TestProject } from 'vitest/node';
import { startTestStack, type TestStack } from './test-stack.js';

export interface TestEnv {
  apiUrl: string;
  ingestUrl: string;
  databaseUrl: string;
  kafkaBrokers: string[];
  dataDir: string;
  serviceLog: string;
  serviceEnv: Record<string, string>;
  /** folder where the test SMTP server (smtp-sink.ts) stores each mail the service sends */
  mailDir: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    env: TestEnv;
  }
}

let stack: TestStack | undefined;

/** One real stack (test-stack.ts) for the whole integration run. */
export async function setup(project: TestProject): Promise<void> {
  stack = await startTestStack('integration');
  project.provide('env', {
    apiUrl: stack.service.apiUrl,
    ingestUrl: stack.service.ingestUrl,
    databaseUrl: stack.stack.databaseUrl,
    kafkaBrokers: stack.stack.kafkaBrokers,
    dataDir: stack.runDir,
    serviceLog: stack.serviceLog,
    serviceEnv: stack.serviceEnv,
    mailDir: stack.mailDir,
  });
}

export async function teardown(): Promise<void> {
  await stack?.stop();
}
