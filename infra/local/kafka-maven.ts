import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { TAIL_LINES, projectFile, removeStaleTemps, tempSuffix } from './kafka-files.js';

/** The broker's jars, fetched by Maven from Maven Central into the cache (infra/kafka/pom.xml). */

const LIB_MARKER = '.tapline-complete.json';

async function sha256File(file: string): Promise<string> {
  return createHash('sha256')
    .update(await readFile(file))
    .digest('hex');
}

interface LibMarker {
  pomSha256: string;
  jars: string[];
}

async function readValidLibs(libDir: string, pomSha256: string): Promise<string[] | undefined> {
  try {
    const marker = JSON.parse(await readFile(path.join(libDir, LIB_MARKER), 'utf8')) as LibMarker;
    if (marker.pomSha256 !== pomSha256 || marker.jars.length === 0) return undefined;
    const jars = marker.jars.map((jar) => path.join(libDir, jar));
    return jars.every((jar) => existsSync(jar)) ? jars : undefined;
  } catch {
    return undefined;
  }
}

interface CommandResult {
  code: number | null;
  output: string[];
}

function runCommand(command: string, args: string[], cwd: string): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const output: string[] = [];
    const collect = (chunk: Buffer): void => {
      output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      output.splice(0, Math.max(0, output.length - TAIL_LINES));
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

/**
 * Fetches the broker's jars from Maven Central once. The pom's hash is part of the marker, so a version
 * bump in infra/kafka/pom.xml refetches; a fetch interrupted at any point leaves only a temp folder.
 */
export async function ensureKafkaLibs(cacheDir: string, log: Logger): Promise<string[]> {
  const pom = projectFile('infra/kafka/pom.xml');
  const pomSha256 = await sha256File(pom);
  const kafkaDir = path.join(cacheDir, 'kafka');
  const libDir = path.join(kafkaDir, 'lib');
  const cached = await readValidLibs(libDir, pomSha256);
  if (cached) return cached;

  await mkdir(kafkaDir, { recursive: true });
  await removeStaleTemps(kafkaDir, /^lib\.tmp-(\d+)-/);
  const tmpDir = path.join(kafkaDir, `lib.tmp-${tempSuffix()}`);
  log.info({ libDir }, 'fetching Kafka broker jars from Maven Central (once)');
  const started = Date.now();
  let result: CommandResult;
  try {
    result = await runCommand(
      'mvn',
      [
        '-q',
        '-B',
        '-Dstyle.color=never',
        '-f',
        pom,
        'dependency:copy-dependencies',
        '-DincludeScope=runtime',
        `-DoutputDirectory=${tmpDir}`,
      ],
      path.dirname(pom),
    );
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(`kafka launcher: 'mvn' not found on PATH; install Maven 3.8+ or fill ${libDir}`, {
        cause: err,
      });
    }
    throw err;
  }
  if (result.code !== 0) {
    await rm(tmpDir, { recursive: true, force: true });
    throw new Error(
      `kafka launcher: mvn dependency:copy-dependencies failed (exit ${result.code}):\n${result.output.join('\n')}`,
    );
  }
  const jars = (await readdir(tmpDir)).filter((name) => name.endsWith('.jar')).sort();
  if (!jars.some((jar) => jar.startsWith('kafka_2.13-'))) {
    await rm(tmpDir, { recursive: true, force: true });
    throw new Error(`kafka launcher: Maven produced no kafka_2.13 jar in ${tmpDir}`);
  }
  const marker: LibMarker = { pomSha256, jars };
  await writeFile(path.join(tmpDir, LIB_MARKER), JSON.stringify(marker, null, 2));

  // Parallel test workers may fetch at the same time; whoever finishes second keeps the winner's folder.
  const winner = await readValidLibs(libDir, pomSha256);
  if (winner) {
    await rm(tmpDir, { recursive: true, force: true });
    return winner;
  }
  await rm(libDir, { recursive: true, force: true });
  await rename(tmpDir, libDir);
  log.info({ libDir, jars: jars.length, ms: Date.now() - started }, 'Kafka broker jars fetched');
  return jars.map((jar) => path.join(libDir, jar));
}
