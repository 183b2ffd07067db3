import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The Python SDK's virtual environment for `npm test` (test/integration/sdk-python.test.ts):
 * `python3 -m venv` under the user's cache (`$XDG_CACHE_HOME/tapline/python-venv/<key>`, else
 * `~/.cache/…`; `.cache/python-venv` of the checkout when that is not writable), with the SDK's
 * dependencies and `test` extras (pytest, ruff, mypy, FastAPI, uvicorn, Flask, Django, httpx,
 * requests) from PyPI. The SDK itself is not installed: the tools run with `PYTHONPATH` and
 * `MYPYPATH` at this checkout's `sdk/python/src` (run()), so one venv serves every clone of the
 * repository on the machine, and a new clone (CI's) does not build its own. The key hashes the
 * requirements (the `dependencies` and `test` lists of sdk/python/pyproject.toml) and the Python
 * version, so a cached venv is reused until one of them changes; older ones are removed. A
 * missing `venv` module is installed with apt-get (python3-venv), as root or with passwordless
 * sudo, like test/helpers/ensure-tools.mjs does for docker-compose.
 */

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SDK_DIR = path.join(REPO, 'sdk/python');

export interface PythonEnv {
  dir: string;
  bin: (tool: string) => string;
  /** where ruff and mypy keep their caches (inside the venv's folder, under .cache/) */
  cacheDir: string;
}

export interface RunResult {
  code: number | null;
  output: string;
}

/** Runs a command, collecting stdout and stderr together; never rejects. */
export function run(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      cwd: opts.cwd ?? REPO,
      // Bytecode caches go under .cache/, never into the checkout's sdk/python; the SDK is imported
      // (and type-checked) from this checkout's source.
      env: {
        ...process.env,
        PYTHONPYCACHEPREFIX: path.join(REPO, '.cache/python-pycache'),
        PYTHONPATH: path.join(SDK_DIR, 'src'),
        MYPYPATH: path.join(SDK_DIR, 'src'),
        ...opts.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 600_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: -1, output: output + String(err) });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

function aptInstall(pkg: string): boolean {
  const root = process.getuid?.() === 0;
  const sudo = !root && has('sudo') && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0;
  if (!has('apt-get') || (!root && !sudo)) return false;
  const apt = (args: string[]) =>
    spawnSync(root ? 'apt-get' : 'sudo', root ? args : ['-n', 'apt-get', ...args], {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    }).status === 0;
  return (
    apt(['install', '-y', '-q', '--no-install-recommends', pkg]) ||
    (apt(['update', '-q']) && apt(['install', '-y', '-q', '--no-install-recommends', pkg]))
  );
}

function venvModuleWorks(): boolean {
  return spawnSync('python3', ['-c', 'import venv, ensurepip'], { stdio: 'ignore' }).status === 0;
}

/** What pyproject.toml says to install for the tests: its `dependencies` and `test` extras. */
function requirements(): string[] {
  const toml = readFileSync(path.join(SDK_DIR, 'pyproject.toml'), 'utf8');
  const block = (start: RegExp) => {
    const m = start.exec(toml);
    return m ? toml.slice(m.index + m[0].length, toml.indexOf(']', m.index + m[0].length)) : '';
  };
  const text = block(/^dependencies = \[/m) + block(/^test = \[/m);
  return [...text.matchAll(/"([^"]+)"/g)].map((m) => m[1]!);
}

/** Where venvs are kept: the user's cache, or the checkout's .cache when that cannot be written. */
function venvRoot(): string {
  const userCache = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  const root = path.join(userCache, 'tapline', 'python-venv');
  try {
    mkdirSync(root, { recursive: true });
    accessSync(root, constants.W_OK);
    return root;
  } catch {
    return path.join(REPO, '.cache/python-venv');
  }
}

/** The cached venv, made when missing. Throws with the tool's output when a step fails. */
export async function pythonVenv(): Promise<PythonEnv> {
  if (!has('python3')) throw new Error('python3 is missing: install Python 3.10 or newer');
  const version = spawnSync('python3', ['-c', 'import sys; print(sys.version)'], { encoding: 'utf8' }).stdout;
  const wanted = requirements();
  const key = createHash('sha256').update(wanted.join('\n')).update(version).digest('hex').slice(0, 16);
  const root = venvRoot();
  const dir = path.join(root, key);
  const env: PythonEnv = {
    dir,
    bin: (tool) => path.join(dir, 'bin', tool),
    cacheDir: path.join(dir, 'tool-cache'),
  };
  const ready = path.join(dir, '.ready');
  // A used venv's folder time says when it was last used (older ones of other keys are removed).
  const used = () => {
    const now = new Date();
    utimesSync(dir, now, now);
    return env;
  };
  if (existsSync(ready)) return used();
  // One maker at a time per venv (two clones' test runs): the others wait for its `.ready`.
  mkdirSync(root, { recursive: true });
  const lock = `${dir}.lock`;
  for (;;) {
    try {
      closeSync(openSync(lock, 'wx'));
      break;
    } catch {
      if (existsSync(ready)) return used();
      let age = 0;
      try {
        age = Date.now() - statSync(lock).mtimeMs;
      } catch {
        continue;
      }
      if (age > 20 * 60_000) rmSync(lock, { force: true });
      else await new Promise((r) => setTimeout(r, 2000));
    }
  }
  try {
    if (existsSync(ready)) return env;
    await makeVenv(root, key, dir, env, wanted);
  } finally {
    rmSync(lock, { force: true });
  }
  return env;
}

async function makeVenv(
  root: string,
  key: string,
  dir: string,
  env: PythonEnv,
  wanted: string[],
): Promise<void> {
  if (!venvModuleWorks() && !(aptInstall('python3-venv') && venvModuleWorks()))
    throw new Error(
      "python3's venv module is missing and could not be installed (needs root or passwordless " +
        'sudo): install python3-venv (apt-get install python3-venv)',
    );
  mkdirSync(root, { recursive: true });
  // Venvs of other requirements are removed once unused for a week (another clone may use one).
  for (const old of readdirSync(root)) {
    const other = path.join(root, old);
    if (!old.startsWith(key) && Date.now() - statSync(other).mtimeMs > 7 * 86_400_000)
      rmSync(other, { recursive: true, force: true });
  }
  // A folder without `.ready` is an interrupted run's: made again (venv scripts carry the
  // folder's path in their shebang, so a venv is made where it stays rather than moved there).
  rmSync(dir, { recursive: true, force: true });
  const made = await run('python3', ['-m', 'venv', dir]);
  if (made.code !== 0) throw new Error(`python3 -m venv failed:\n${made.output}`);
  const pip = await run(env.bin('pip'), [
    'install',
    '-q',
    '--disable-pip-version-check',
    // Byte-compiling Django, mypy and the rest is most of an install's CPU; Python compiles
    // what it imports on first use instead.
    '--no-compile',
    ...wanted,
  ]);
  if (pip.code !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`pip install of sdk/python's test requirements failed:\n${pip.output}`);
  }
  writeFileSync(path.join(dir, '.ready'), `${new Date().toISOString()}\n`);
}
