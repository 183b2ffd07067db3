import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Lines of a child process's output kept for error messages. */
export const TAIL_LINES = 50;

/** Locates the checkout, so the launcher works from `infra/local/` (tsx) and from `dist/infra/local/` (build). */
export function projectFile(relative: string): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, relative);
    if (existsSync(candidate)) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`kafka launcher: ${relative} not found above ${import.meta.url}`);
    dir = parent;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Leftovers of runs whose Node process died mid-way carry that process's pid in their name. */
export async function removeStaleTemps(dir: string, pattern: RegExp): Promise<void> {
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    const pid = Number(pattern.exec(name)?.[1]);
    if (pid && pid !== process.pid && !isAlive(pid)) {
      await rm(path.join(dir, name), { recursive: true, force: true });
    }
  }
}

/** The suffix of a temp name: this process's pid (see removeStaleTemps) and a random part. */
export function tempSuffix(): string {
  return `${process.pid}-${randomBytes(4).toString('hex')}`;
}
