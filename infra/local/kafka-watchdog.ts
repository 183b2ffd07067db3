import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { TAIL_LINES } from './kafka-files.js';

/** Java processes of the local broker, each under a /bin/sh watchdog that ends it when Node dies. */

/** Java @argfile syntax: whitespace separates arguments, so quote the ones that need it. */
function argfileLine(arg: string): string {
  return /[\s"'\\#]/.test(arg) ? `"${arg.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"` : arg;
}

/** Writes the JVM's @argfile: one argument a line. */
export async function writeArgfile(file: string, args: string[]): Promise<void> {
  await writeFile(file, `${args.map(argfileLine).join('\n')}\n`);
}

/** Resolves to false on timeout; clears its timer so a settled race never keeps Node alive. */
export async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Starts java as a child of /bin/sh, which waits for it; a background subshell reads the shell's stdin,
 * a pipe whose only write end belongs to Node. The kernel closes that end however Node dies (SIGKILL
 * included), the read returns EOF, and the subshell sends SIGTERM, then SIGKILL after 10 s. Because the
 * shell has not reaped java yet, the pid it signals cannot have been reused. The shell reports java's pid on
 * fd 3 and exits with java's status (143 after SIGTERM, 137 after SIGKILL).
 * POSIX sh only (dash on Debian): `read -t` and `wait -n` are not available there.
 */
const WATCHDOG_SH = `
bin=$1; argfile=$2; shift 2
exec 5<&0 </dev/null
"$bin" "$argfile" "$TAPLINE_JAVA_MAIN" "$@" 3>&- 5<&- &
jpid=$!
echo "$jpid" >&3
exec 3>&-
(
  while read -r _ <&5; do :; done
  kill -TERM "$jpid" 2>/dev/null || exit 0
  i=0
  while kill -0 "$jpid" 2>/dev/null; do
    i=$((i + 1))
    if [ "$i" -gt 100 ]; then kill -KILL "$jpid" 2>/dev/null; exit 0; fi
    sleep 0.1
  done
) &
wpid=$!
exec 5<&-
wait "$jpid"
rc=$?
kill "$wpid" 2>/dev/null
exit "$rc"
`;

export interface JavaProcess {
  child: ChildProcess;
  pid: number;
  exited: Promise<number | null>;
  /** Resolves once stdout/stderr are drained, so error messages carry the last words of the JVM. */
  closed: Promise<void>;
  tail: string[];
  isRunning(): boolean;
  signal(signal: NodeJS.Signals): void;
}

const WARN_LINE = /^(WARN|ERROR|FATAL)\b|^\[[\d.]+s\]\[(warning|error)\]|warning:|^Exception|^Error|^#/;
const CONTINUATION_LINE = /^(\s|Caused by:|\.\.\. \d+ more)/;

export async function spawnJava(
  cwd: string,
  argfile: string,
  mainClass: string,
  args: string[],
  log: Logger,
  onLine?: (line: string) => void,
): Promise<JavaProcess> {
  const child = spawn(
    '/bin/sh',
    ['-c', WATCHDOG_SH, 'tapline-kafka-watchdog', 'java', `@${argfile}`, ...args],
    {
      // Own process group: Ctrl-C in a terminal must not stop the broker before the app has flushed and committed.
      detached: true,
      cwd,
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      // The main class travels in the environment so only the java process itself matches `pgrep -f kafka.Kafka`.
      env: { ...process.env, TAPLINE_JAVA_MAIN: mainClass },
    },
  );
  child.on('error', (err) => log.warn({ err }, 'kafka launcher: /bin/sh wrapper error'));
  const out = log.child({ proc: 'kafka' });
  const tail: string[] = [];
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      exitCode = code;
      // The lifeline has done its job once the shell is gone.
      child.stdin?.destroy();
      resolve(code);
    });
  });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));

  const follow = (stream: NodeJS.ReadableStream | null, alwaysWarn: boolean): void => {
    if (!stream) return;
    let warnBlock = false;
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line: string) => {
      if (!line) return;
      warnBlock = alwaysWarn || (CONTINUATION_LINE.test(line) ? warnBlock : WARN_LINE.test(line));
      tail.push(line);
      if (tail.length > TAIL_LINES) tail.shift();
      if (warnBlock) out.warn(line);
      else out.debug(line);
      onLine?.(line);
    });
  };
  follow(child.stdout, false);
  follow(child.stderr, true);

  const pidChannel = child.stdio[3] as Readable | null | undefined;
  const pid = await new Promise<number>((resolve, reject) => {
    let text = '';
    child.once('error', reject);
    if (!pidChannel) return reject(new Error('kafka launcher: no pid channel to the watchdog shell'));
    pidChannel.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    pidChannel.once('end', () => {
      const parsed = Number(text.trim());
      if (Number.isInteger(parsed) && parsed > 0) resolve(parsed);
      else reject(new Error(`kafka launcher: could not start java via /bin/sh (got '${text.trim()}')`));
    });
  });

  const isRunning = (): boolean => exitCode === undefined;
  return {
    child,
    pid,
    exited,
    closed,
    tail,
    isRunning,
    signal(signal) {
      // Once the shell has exited it has reaped java, so the pid may belong to someone else by now.
      if (!isRunning()) return;
      try {
        process.kill(pid, signal);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
      }
    },
  };
}

export async function waitClosed(proc: JavaProcess): Promise<void> {
  await within(proc.closed, 1_000);
}

export function lastOutput(proc: JavaProcess): string {
  return proc.tail.length ? proc.tail.join('\n') : '(no output)';
}

/** The shell's own 127 ("not found") is the one failure Kafka's output cannot explain. */
export function exitHint(code: number | null): string {
  return code === 127 ? ' (is a JDK 17+ `java` on PATH?)' : '';
}
