/**
 * Builds the dashboard bundle (`web/dist`) only when its inputs changed since the last build.
 * `npm start` (through `npm run build`) runs this after the incremental TypeScript build, so a
 * start without changes to the dashboard skips Vite entirely.
 *
 * The inputs are every file under `web/` except `web/dist` (sources, `index.html`, `public/`,
 * `vite.config.ts`, its tsconfigs), `package-lock.json` (the versions of React, uPlot and Vite
 * that end up in the bundle) and the build mode (`NODE_ENV`, production when unset, as Vite
 * takes it). Their SHA-256 is written to `web/dist/.inputs-hash` after a successful build; a
 * build runs when that file is missing, differs, or `web/dist/index.html` is gone.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const HASH_FILE = '.inputs-hash';

/** Every input file of the web bundle under `root`, relative, sorted. */
function inputFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const entry of readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const child = path.posix.join(rel, entry.name);
      if (child === 'web/dist' || entry.name === 'node_modules') continue;
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile()) out.push(child);
    }
  };
  walk('web');
  if (existsSync(path.join(root, 'package-lock.json'))) out.push('package-lock.json');
  return out.sort();
}

/** SHA-256 over the input files' names and contents and the build mode. */
export function webInputsHash(root: string, mode = process.env.NODE_ENV || 'production'): string {
  const h = createHash('sha256');
  h.update(`mode=${mode}\0`);
  for (const file of inputFiles(root)) {
    h.update(file + '\0');
    h.update(readFileSync(path.join(root, file)));
    h.update('\0');
  }
  return h.digest('hex');
}

/** Whether `web/dist` is missing or was built from other inputs than the current ones. */
export function webBuildNeeded(root: string, hash = webInputsHash(root)): boolean {
  const dist = path.join(root, 'web', 'dist');
  if (!existsSync(path.join(dist, 'index.html'))) return true;
  try {
    return readFileSync(path.join(dist, HASH_FILE), 'utf8').trim() !== hash;
  } catch {
    return true;
  }
}

/**
 * Runs `npm run build:web` when needed and records the inputs' hash; returns whether it built.
 * The hash is taken before the build, so an edit made while Vite runs leads to a rebuild next time.
 */
export function buildWebIfChanged(
  root: string,
  opts: { quiet?: boolean; env?: NodeJS.ProcessEnv } = {},
): boolean {
  const env = opts.env ?? process.env;
  const hash = webInputsHash(root, env.NODE_ENV || 'production');
  if (!webBuildNeeded(root, hash)) {
    if (!opts.quiet) console.log('Dashboard bundle is up to date (web/ unchanged): not rebuilt.');
    return false;
  }
  const r = spawnSync('npm', ['run', '--silent', 'build:web'], {
    cwd: root,
    env,
    stdio: ['ignore', opts.quiet ? 'ignore' : 'inherit', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`npm run build:web exited ${r.status ?? r.signal}`);
  writeFileSync(path.join(root, 'web', 'dist', HASH_FILE), hash + '\n');
  return true;
}

// Run as a script (`node dist/infra/web-build.js`): the repository root is the working directory.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    buildWebIfChanged(process.cwd());
  } catch (err) {
    console.error((err as Error).message);
    process.exit(1);
  }
}
