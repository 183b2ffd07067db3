import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '..', '..');

/** A port the OS calls free on 127.0.0.1 (bound to port 0, then released). */
function askPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });
}

/** Ports this process handed out: a released port can come back from the OS at the next ask. */
const handedOut = new Set<number>();

/**
 * A free TCP port on 127.0.0.1, never one this process handed out before: a stack asks for
 * several ports before anything binds them, and two of its parts on one port fail to start.
 */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const port = await askPort();
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error('no free port the OS has not handed out before in 100 asks');
}

/** Polls `fn` until it returns a truthy value; never sleeps a fixed time to "let things settle". */
export async function waitFor<T>(
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  opts: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 20_000);
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out waiting for ${opts.what ?? 'condition'}${lastErr ? `: ${(lastErr as Error).message}` : ''}`,
      );
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 100));
  }
}

export interface ServiceProcess {
  child: ChildProcess;
  apiUrl: string;
  ingestUrl: string;
  logFile: string;
  exited: Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `services/main.ts` as a child process (tsx) with the given environment and waits until
 * `/readyz` answers 200 (or, for roles without the API, until the log says ready).
 */
export async function startService(env: Record<string, string>, logFile: string): Promise<ServiceProcess> {
  fs.mkdirSync(path.dirname(logFile), { recursive: true });
  const out = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'services', 'main.ts')], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', LOG_LEVEL: 'info', DEMO_ACCOUNT: 'false', ...env },
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const scheme = env.TLS_CERT ? 'https' : 'http';
  const apiUrl = `${scheme}://127.0.0.1:${env.PORT}`;
  const ingestUrl = `${scheme}://127.0.0.1:${env.INGEST_PORT}`;
  let dead = false;
  void exited.then(() => (dead = true));
  await waitFor(
    async () => {
      if (dead) throw new Error(`service exited early; see ${logFile}`);
      const roles = env.ROLES ?? 'all';
      // Over TLS (a test's own certificate, which fetch does not trust) the log says when.
      if (scheme === 'http' && (roles === 'all' || roles.includes('api'))) {
        const res = await fetch(`${apiUrl}/readyz`).catch(() => undefined);
        return res?.status === 200;
      }
      return fs.readFileSync(logFile, 'utf8').includes('tapline ready');
    },
    // TEST_SERVICE_READY_MS lengthens the wait on a machine shared with other heavy work.
    {
      timeoutMs: Number(process.env.TEST_SERVICE_READY_MS ?? 120_000),
      intervalMs: 200,
      what: 'service ready',
    },
  ).catch((err: Error) => {
    child.kill('SIGKILL');
    const tail = fs.readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n');
    throw new Error(`${err.message}\n${tail}`);
  });
  return {
    child,
    apiUrl,
    ingestUrl,
    logFile,
    exited,
    stop: async (signal: NodeJS.Signals = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}
