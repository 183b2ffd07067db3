/**
 * The benchmarked stack, started as `npm start` starts it: `npm run build`, then
 * `node dist/services/main.js` as a child process (which starts Kafka and Postgres itself), with
 * its own DATA_DIR and free ports. Plus /proc readings of the service and the broker JVM.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { freePort } from '../helpers/service-process.js';

export { freePort };

export const ROOT = path.resolve(import.meta.dirname, '..', '..');

export async function poll<T>(
  fn: () => Promise<T | undefined | null | false>,
  opts: { timeoutMs: number; intervalMs?: number; what: string },
): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${opts.what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 200));
  }
}

/** `npm run build`; a failing type check still emits (tsc default), so only a missing output is fatal. */
export async function build(log: (s: string) => void): Promise<void> {
  const child = spawn('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  if (code !== 0) {
    log(
      `npm run build exited ${code}; using what tsc emitted. Last lines:\n${out.split('\n').slice(-8).join('\n')}`,
    );
  }
  if (!fs.existsSync(path.join(ROOT, 'dist', 'services', 'main.js')))
    throw new Error('build produced no dist/');
}

export interface DemoCredentials {
  accountSid: string;
  apiToken: string;
  bucketSid: string;
}

export interface ServiceHandle {
  child: ChildProcess;
  pid: number;
  env: Record<string, string>;
  apiUrl: string;
  ingestUrl: string;
  kafkaBrokers: string[];
  /** demo credentials, only on the first start of a fresh DATA_DIR */
  demo: DemoCredentials | undefined;
  stop(): Promise<number | null>;
}

export interface ServiceOptions {
  env: Record<string, string>;
  logFile: string;
  /** folder for `--cpu-prof` output; profiling off when absent */
  cpuProfDir?: string;
  /** a fresh DATA_DIR prints the demo credentials: wait for them */
  expectDemo: boolean;
  /** compiled tree to run instead of `dist/` (A/B against another build) */
  dist?: string;
}

/** Starts the service and waits for /readyz; parses the demo credentials printed on a fresh DATA_DIR. */
export async function startService(opts: ServiceOptions): Promise<ServiceHandle> {
  const nodeArgs = opts.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`] : [];
  const child = spawn(
    process.execPath,
    [...nodeArgs, path.join(path.resolve(ROOT, opts.dist ?? 'dist'), 'services', 'main.js')],
    {
      cwd: ROOT,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const log = fs.createWriteStream(opts.logFile, { flags: 'a' });
  child.stderr!.pipe(log);
  let demo: DemoCredentials | undefined;
  let inDemo = false;
  let json = '';
  createInterface({ input: child.stdout! }).on('line', (line) => {
    log.write(`${line}\n`);
    if (line.includes('Tapline demo account')) inDemo = true;
    else if (inDemo && (json || line.startsWith('{'))) {
      json += `${line}\n`;
      if (line.startsWith('}')) {
        inDemo = false;
        demo = JSON.parse(json) as DemoCredentials;
      }
    }
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  let dead = false;
  void exited.then(() => (dead = true));
  const apiUrl = `http://127.0.0.1:${opts.env.PORT}`;
  const ingestUrl = `http://127.0.0.1:${opts.env.INGEST_PORT}`;
  await poll(
    async () => {
      if (dead) throw new Error(`service exited; see ${opts.logFile}`);
      const [a, i] = await Promise.all([
        fetch(`${apiUrl}/readyz`).then(
          (r) => r.status,
          () => 0,
        ),
        fetch(`${ingestUrl}/healthz`).then(
          (r) => r.status,
          () => 0,
        ),
      ]);
      return a === 200 && i === 200;
    },
    { timeoutMs: 180_000, intervalMs: 300, what: 'service ready' },
  ).catch((err: Error) => {
    child.kill('SIGKILL');
    throw err;
  });
  // The credentials are printed after the listeners open: give stdout a moment to deliver them.
  if (opts.expectDemo) await poll(async () => demo, { timeoutMs: 10_000, what: 'demo credentials' });
  return {
    child,
    pid: child.pid!,
    env: opts.env,
    apiUrl,
    ingestUrl,
    kafkaBrokers: [`127.0.0.1:${opts.env.KAFKA_PORT}`],
    demo,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      const code = await exited;
      clearTimeout(timer);
      log.end();
      return code;
    },
  };
}

/**
 * A Tapline process of roles without a listener the bench polls (e.g. `ROLES=processor`), started
 * from the same build as the service and ready when its log says so. Its log goes to `logFile`.
 */
export async function startRoleProcess(opts: {
  env: Record<string, string>;
  logFile: string;
  dist?: string;
}): Promise<{ pid: number; stop(): Promise<number | null> }> {
  const out = fs.openSync(opts.logFile, 'a');
  const child = spawn(
    process.execPath,
    [path.join(path.resolve(ROOT, opts.dist ?? 'dist'), 'services', 'main.js')],
    { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'info', ...opts.env }, stdio: ['ignore', out, out] },
  );
  fs.closeSync(out);
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  let dead = false;
  void exited.then(() => (dead = true));
  await poll(
    async () => {
      if (dead) throw new Error(`process exited; see ${opts.logFile}`);
      return fs.readFileSync(opts.logFile, 'utf8').includes('tapline ready');
    },
    { timeoutMs: 120_000, intervalMs: 300, what: `${opts.env.ROLES ?? 'roles'} ready` },
  ).catch((err: Error) => {
    child.kill('SIGKILL');
    throw err;
  });
  return {
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

const CLK_TCK = 100;

/** utime + stime of a process in seconds (/proc/<pid>/stat fields 14 and 15). */
export function cpuSeconds(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/** VmHWM (peak resident set) and VmRSS in bytes. */
export function memory(pid: number): { peakRss: number; rss: number } {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    return { peakRss: kb('VmHWM'), rss: kb('VmRSS') };
  } catch {
    return { peakRss: NaN, rss: NaN };
  }
}

/** Descendant processes of `root` whose command name is `comm` (the broker JVM runs under a watchdog sh). */
export function descendants(root: number, comm: string | RegExp): number[] {
  const parent = new Map<number, number>();
  const names = new Map<number, string>();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      names.set(Number(d), stat.slice(stat.indexOf('(') + 1, close));
      parent.set(Number(d), Number(stat.slice(close + 2).split(' ')[1]));
    } catch {
      // process ended while listing
    }
  }
  const out: number[] = [];
  for (const [pid, name] of names) {
    if (typeof comm === 'string' ? name !== comm : !comm.test(name)) continue;
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) {
      if (p === root) {
        out.push(pid);
        break;
      }
    }
  }
  return out;
}

/** Load average (1, 5, 15 min) — the machine is shared, so every figure is reported with it. */
export function loadAverage(): number[] {
  try {
    return fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
  } catch {
    return [];
  }
}
