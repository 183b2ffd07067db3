import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The Python SDK's virtual environment for `npm test` (test/integration/sdk-python.test.ts):
 * `python3 -m venv` under `.cache/python-venv/<key>`, with `sdk/python` installed editable and
 * its `test` extras (pytest, ruff, mypy, FastAPI, uvicorn, Flask, Django, httpx, requests) from
 * PyPI. The key hashes the requirements (the `test` extras and build system of
 * sdk/python/pyproject.toml), the Python version and the checkout's path (an editable install
 * points at it), so a cached venv is reused until one of them changes; older ones are removed. A missing `venv` module is installed with apt-get (python3-venv), as
 * root or with passwordless sudo, like test/helpers/ensure-tools.mjs does for docker-compose.
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
      // Bytecode caches go under .cache/, never into the checkout's sdk/python.
      env: { ...process.env, PYTHONPYCACHEPREFIX: path.join(REPO, '.cache/python-pycache'), ...opts.env },
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

/** The lines of pyproject.toml that decide what is installed: the build system and the `test` extras. */
function requirements(): string {
  const toml = readFileSync(path.join(SDK_DIR, 'pyproject.toml'), 'utf8');
  const block = (start: RegExp) => {
    const m = start.exec(toml);
    return m ? toml.slice(m.index, toml.indexOf(']', m.index + m[0].length) + 1) : '';
  };
  return block(/^requires = \[/m) + block(/^test = \[/m) + block(/^dependencies = \[/m);
}

/** The cached venv, made when missing. Throws with the tool's output when a step fails. */
export async function pythonVenv(): Promise<PythonEnv> {
  if (!has('python3')) throw new Error('python3 is missing: install Python 3.10 or newer');
  const version = spawnSync('python3', ['-c', 'import sys; print(sys.version)'], { encoding: 'utf8' }).stdout;
  const key = createHash('sha256')
    .update(requirements())
    .update(version)
    .update(SDK_DIR)
    .digest('hex')
    .slice(0, 16);
  const root = path.join(REPO, '.cache/python-venv');
  const dir = path.join(root, key);
  const env: PythonEnv = {
    dir,
    bin: (tool) => path.join(dir, 'bin', tool),
    cacheDir: path.join(dir, 'tool-cache'),
  };
  if (existsSync(path.join(dir, '.ready'))) return env;

  if (!venvModuleWorks() && !(aptInstall('python3-venv') && venvModuleWorks()))
    throw new Error(
      "python3's venv module is missing and could not be installed (needs root or passwordless " +
        'sudo): install python3-venv (apt-get install python3-venv)',
    );
  mkdirSync(root, { recursive: true });
  for (const old of readdirSync(root))
    if (old !== key) rmSync(path.join(root, old), { recursive: true, force: true });
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
    '-e',
    `${SDK_DIR}[test]`,
  ]);
  if (pip.code !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`pip install -e sdk/python[test] failed:\n${pip.output}`);
  }
  writeFileSync(path.join(dir, '.ready'), `${new Date().toISOString()}\n`);
  return env;
}
