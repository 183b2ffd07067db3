import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { removeStaleTemps, tempSuffix } from './kafka-files.js';

/** Class-data sharing for the broker's JVM: an archive per classpath and flags, in the cache. */

const KEEP_OTHER_ARCHIVES = 1;

export interface CdsPlan {
  /** An archive from an earlier clean shutdown, mapped at start. */
  use?: string;
  /** Where this run dumps its classes at exit; promoted to `final` only after a clean exit. */
  dumpTo?: string;
  final: string;
}

/**
 * A dynamic CDS archive shortens broker start (bench/README.md). It is only valid for the exact
 * classpath and JVM flags, hence the hash in its name. A truncated archive crashes the JVM with
 * SIGBUS, so archives are dumped to a temp name and renamed only after the JVM exited cleanly.
 */
export async function planCds(cacheDir: string, jars: string[], jvmFlags: string[]): Promise<CdsPlan> {
  const dir = path.join(cacheDir, 'kafka', 'cds');
  await mkdir(dir, { recursive: true });
  await removeStaleTemps(dir, /\.jsa\.tmp-(\d+)-/);
  const hash = createHash('sha256').update(jvmFlags.join('\n'));
  for (const jar of jars) {
    const info = await stat(jar);
    hash.update(`\n${jar}:${info.size}:${info.mtimeMs}`);
  }
  const final = path.join(dir, `broker-${hash.digest('hex').slice(0, 16)}.jsa`);
  await pruneArchives(dir, final);
  if (existsSync(final)) return { use: final, final };
  return { dumpTo: `${final}.tmp-${tempSuffix()}`, final };
}

export function cdsFlags(plan: CdsPlan): string[] {
  if (plan.use) return [`-XX:SharedArchiveFile=${plan.use}`];
  // The dump lists every class it skips (old bytecode, unlinked) as a warning; only real failures matter.
  if (plan.dumpTo) return ['-Xlog:cds=error', `-XX:ArchiveClassesAtExit=${plan.dumpTo}`];
  return [];
}

/**
 * Each lib or flag change (another heapMb, a Kafka bump) leaves a ~50 MB archive behind; keep the one in
 * use plus the newest other (say tests and `npm start` with different heaps).
 * Deleting one that a running JVM has mapped is safe: the mapping keeps the inode alive.
 */
async function pruneArchives(dir: string, current: string): Promise<void> {
  const names = (await readdir(dir)).filter(
    (name) => name.endsWith('.jsa') && name !== path.basename(current),
  );
  const dated = await Promise.all(
    names.map(async (name) => ({
      file: path.join(dir, name),
      mtime: await stat(path.join(dir, name)).then(
        (info) => info.mtimeMs,
        () => 0,
      ),
    })),
  );
  dated.sort((a, b) => b.mtime - a.mtime);
  for (const { file } of dated.slice(KEEP_OTHER_ARCHIVES)) await rm(file, { force: true });
}

export async function finishCds(
  plan: CdsPlan,
  code: number | null,
  sawCdsWarning: boolean,
  log: Logger,
): Promise<void> {
  if (plan.use && sawCdsWarning) {
    // The JVM refused the archive (JDK updated, jar touched): drop it so the next start dumps a fresh one.
    log.warn({ archive: plan.use }, 'discarding unusable Kafka class-data archive');
    await rm(plan.use, { force: true });
    return;
  }
  if (!plan.dumpTo) return;
  // 143: SIGTERM handled by the JVM's shutdown hooks, which is when the dump is written.
  const clean = (code === 0 || code === 143) && !sawCdsWarning;
  const size = await stat(plan.dumpTo).then(
    (info) => info.size,
    () => 0,
  );
  if (clean && size > 0) {
    await rename(plan.dumpTo, plan.final);
    log.info({ archive: plan.final, bytes: size }, 'Kafka class-data archive saved for faster starts');
  } else {
    await unlink(plan.dumpTo).catch(() => undefined);
  }
}
