import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';

export interface KafkaHandle {
  brokers: string[];
  pid: number;
  stop(): Promise<void>;
  kill(signal?: NodeJS.Signals): void;
  exited: Promise<number | null>;
}

export interface KafkaLaunchOptions {
  cacheDir: string;
  dataDir: string;
  port: number;
  controllerPort: number;
  log: Logger;
  heapMb?: number;
}

const HOST = '127.0.0.1';
const READY_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 20_000;
const TAIL_LINES = 50;
const STARTED_LINE = 'Kafka Server started';
const LIB_MARKER = '.tapline-complete.json';
const FORMATTED_MARKER = '.tapline-formatted';
const KEEP_OTHER_ARCHIVES = 1;

/** Locates the checkout, so the launcher works from `infra/local/` (tsx) and from `dist/infra/local/` (build). */
function projectFile(relative: string): string {
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
async function removeStaleTemps(dir: string, pattern: RegExp): Promise<void> {
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    const pid = Number(pattern.exec(name)?.[1]);
    if (pid && pid !== process.pid && !isAlive(pid)) {
      await rm(path.join(dir, name), { recursive: true, force: true });
    }
  }
}

function tempSuffix(): string {
  return `${process.pid}-${randomBytes(4).toString('hex')}`;
}

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

  // NOTE: parallel test workers may fetch at the same time; whoever finishes second keeps the winner's folder.
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

/** Java @argfile syntax: whitespace separates arguments, so quote the ones that need it. */
function argfileLine(arg: string): string {
  return /[\s"'\\#]/.test(arg) ? `"${arg.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"` : arg;
}

function serverProperties(opts: KafkaLaunchOptions, logDir: string): string {
  const maxMessageBytes = 16 * 1024 * 1024;
  const props: [string, string | number | boolean][] = [
    ['process.roles', 'broker,controller'],
    ['node.id', 1],
    ['controller.quorum.voters', `1@${HOST}:${opts.controllerPort}`],
    ['listeners', `PLAINTEXT://${HOST}:${opts.port},CONTROLLER://${HOST}:${opts.controllerPort}`],
    ['advertised.listeners', `PLAINTEXT://${HOST}:${opts.port}`],
    ['inter.broker.listener.name', 'PLAINTEXT'],
    ['controller.listener.names', 'CONTROLLER'],
    ['listener.security.protocol.map', 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT'],
    ['log.dirs', logDir],
    ['num.partitions', 4],
    ['default.replication.factor', 1],
    ['min.insync.replicas', 1],
    // One node: every internal topic must fit on it, or consumer groups and transactions never start.
    ['offsets.topic.replication.factor', 1],
    // Fewer than the default 50 so the first consumer group does not wait for 50 partitions to be created.
    ['offsets.topic.num.partitions', 8],
    ['transaction.state.log.replication.factor', 1],
    ['transaction.state.log.min.isr', 1],
    ['transaction.state.log.num.partitions', 8],
    ['share.coordinator.state.topic.replication.factor', 1],
    ['share.coordinator.state.topic.min.isr', 1],
    // Tests start consumers one after another; the default 3 s delay would stall every first join.
    ['group.initial.rebalance.delay.ms', 0],
    // The default 128 MiB would take a quarter of a 512 MiB heap for compacting a handful of keys.
    ['log.cleaner.dedupe.buffer.size', 8 * 1024 * 1024],
    // Topics are declared by the app (createTopics); a typo must fail instead of creating a topic.
    ['auto.create.topics.enable', false],
    ['log.retention.hours', 24],
    // Retention only deletes closed segments: roll hourly so 24 h retention applies on a quiet dev broker.
    ['log.roll.hours', 1],
    ['log.segment.bytes', 64 * 1024 * 1024],
    // Ingest accepts bodies up to 10 MiB; leave room for the record batch overhead around them.
    ['message.max.bytes', maxMessageBytes],
    ['replica.fetch.max.bytes', maxMessageBytes],
    ['num.recovery.threads.per.data.dir', 1],
  ];
  const escape = (value: string | number | boolean): string => String(value).replace(/\\/g, '\\\\');
  return `# Generated by infra/local/kafka.launcher.ts on every start; edits are overwritten.\n${props
    .map(([key, value]) => `${key}=${escape(value)}`)
    .join('\n')}\n`;
}

async function assertPortFree(port: number, role: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(
              `kafka launcher: ${role} port ${HOST}:${port} is already in use (another broker or service?); ` +
                `stop it or choose another port`,
            )
          : err,
      );
    });
    server.listen({ host: HOST, port, exclusive: true }, () => server.close(() => resolve()));
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: HOST, port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves to false on timeout; clears its timer so a settled race never keeps Node alive. */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
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
 * NOTE: POSIX sh only (dash on Debian); `read -t` and `wait -n` are not available there.
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

interface JavaProcess {
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

async function spawnJava(
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

async function waitClosed(proc: JavaProcess): Promise<void> {
  await within(proc.closed, 1_000);
}

function lastOutput(proc: JavaProcess): string {
  return proc.tail.length ? proc.tail.join('\n') : '(no output)';
}

/** The shell's own 127 ("not found") is the one failure Kafka's output cannot explain. */
function exitHint(code: number | null): string {
  return code === 127 ? ' (is a JDK 17+ `java` on PATH?)' : '';
}

class EarlyExitError extends Error {}

interface CdsPlan {
  /** An archive from an earlier clean shutdown, mapped at start. */
  use?: string;
  /** Where this run dumps its classes at exit; promoted to `final` only after a clean exit. */
  dumpTo?: string;
  final: string;
}

/**
 * A dynamic CDS archive cuts broker start from ~3.1 s to ~2.0 s on 2 cores. It is only valid for the exact
 * classpath and JVM flags, hence the hash in its name. NOTE: a truncated archive crashes the JVM with SIGBUS,
 * so archives are dumped to a temp name and renamed only after the JVM exited cleanly.
 */
async function planCds(cacheDir: string, jars: string[], jvmFlags: string[]): Promise<CdsPlan> {
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

function cdsFlags(plan: CdsPlan): string[] {
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

async function finishCds(
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

async function writeArgfile(file: string, args: string[]): Promise<void> {
  await writeFile(file, `${args.map(argfileLine).join('\n')}\n`);
}

/** A cluster id is a base64url UUID; Kafka refuses one starting with '-' because it reads like a flag. */
function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

async function clusterId(dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'cluster.id');
  const existing = await readFile(file, 'utf8').then(
    (text) => text.trim(),
    () => '',
  );
  if (existing) return existing;
  const id = newClusterId();
  const tmp = `${file}.tmp-${tempSuffix()}`;
  await writeFile(tmp, `${id}\n`);
  await rename(tmp, file);
  return id;
}

async function formatOnce(
  dataDir: string,
  logDir: string,
  propsFile: string,
  jvmArgs: string[],
  cds: CdsPlan,
  log: Logger,
): Promise<void> {
  const marker = path.join(dataDir, FORMATTED_MARKER);
  if (existsSync(marker) && existsSync(path.join(logDir, 'meta.properties'))) return;
  // The id is persisted before formatting: a retry after an interrupted format must reuse it.
  const id = await clusterId(dataDir);
  const started = Date.now();
  const run = async (useArchive: boolean): Promise<{ code: number | null; proc: JavaProcess }> => {
    const argfile = path.join(dataDir, 'format.jvm.args');
    const archive = useArchive && cds.use ? [`-XX:SharedArchiveFile=${cds.use}`] : [];
    await writeArgfile(argfile, [...jvmArgs, ...archive]);
    const proc = await spawnJava(
      dataDir,
      argfile,
      'kafka.tools.StorageTool',
      ['format', '-t', id, '-c', propsFile, '--ignore-formatted'],
      log,
    );
    const code = await proc.exited;
    await waitClosed(proc);
    return { code, proc };
  };
  let { code, proc } = await run(true);
  if (code !== 0 && cds.use) {
    log.warn(
      { code, archive: cds.use },
      'storage format failed with the class-data archive; retrying without',
    );
    await rm(cds.use, { force: true });
    delete cds.use;
    ({ code, proc } = await run(false));
  }
  if (code !== 0) {
    throw new Error(
      `kafka launcher: storage format failed (exit ${code})${exitHint(code)}; last output:\n${lastOutput(proc)}`,
    );
  }
  await writeFile(marker, `${id}\n`);
  log.info({ clusterId: id, ms: Date.now() - started }, 'Kafka storage formatted');
}

async function launchBroker(
  opts: KafkaLaunchOptions,
  jvmArgs: string[],
  cds: CdsPlan,
  propsFile: string,
): Promise<KafkaHandle> {
  const { log, port } = opts;
  const argfile = path.join(opts.dataDir, 'broker.jvm.args');
  await writeArgfile(argfile, [...jvmArgs, ...cdsFlags(cds)]);
  const started = Date.now();
  let sawStarted = false;
  let sawCdsWarning = false;
  let stopping: Promise<void> | undefined;
  const proc = await spawnJava(opts.dataDir, argfile, 'kafka.Kafka', [propsFile], log, (line) => {
    if (line.includes(STARTED_LINE)) sawStarted = true;
    if (/\[(warning|error)\]\[cds/.test(line)) sawCdsWarning = true;
  });
  // Runs however the broker ends: stop(), a crash, kill() from a test, or a failed start.
  const settled = proc.exited.then(async (code) => {
    if (stopping) log.info({ pid: proc.pid, code }, 'Kafka broker stopped');
    else log.warn({ pid: proc.pid, code }, 'Kafka broker exited unexpectedly');
    await finishCds(cds, code, sawCdsWarning, log).catch((err: unknown) =>
      log.warn({ err }, 'could not finish the Kafka class-data archive'),
    );
  });

  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      if (proc.isRunning()) {
        proc.signal('SIGTERM');
        if (!(await within(proc.exited, STOP_TIMEOUT_MS))) {
          log.warn(
            { pid: proc.pid },
            `Kafka broker still running ${STOP_TIMEOUT_MS / 1000} s after SIGTERM; killing it`,
          );
          proc.signal('SIGKILL');
        }
      }
      await settled;
      // Bounded: an orphaned grandchild could hold stdout open and must not hang shutdown.
      await waitClosed(proc);
    })());

  // The controller port opens before the broker is unfenced; only the PLAINTEXT port and the log line mean ready.
  const deadline = started + READY_TIMEOUT_MS;
  while (!(sawStarted && (await canConnect(port)))) {
    if (!proc.isRunning()) {
      const code = await proc.exited;
      await waitClosed(proc);
      await settled;
      throw new EarlyExitError(
        `kafka launcher: broker exited during start (exit ${code})${exitHint(code)}; last output:\n${lastOutput(proc)}`,
      );
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(
        `kafka launcher: broker not ready after ${READY_TIMEOUT_MS / 1000} s on ${HOST}:${port}; ` +
          `last output:\n${lastOutput(proc)}`,
      );
    }
    await sleep(50);
  }
  log.info(
    { pid: proc.pid, port, ms: Date.now() - started, cds: cds.use ? 'used' : cds.dumpTo ? 'dumping' : 'off' },
    'Kafka broker ready',
  );

  return {
    brokers: [`${HOST}:${port}`],
    pid: proc.pid,
    stop,
    // Default SIGKILL: graceful shutdown is what stop() is for; fault injection wants the crash.
    kill: (signal: NodeJS.Signals = 'SIGKILL') => proc.signal(signal),
    exited: proc.exited,
  };
}

export async function startKafka(opts: KafkaLaunchOptions): Promise<KafkaHandle> {
  const { cacheDir, dataDir, port, controllerPort, log } = opts;
  const heapMb = opts.heapMb ?? 512;
  if (!path.isAbsolute(cacheDir) || !path.isAbsolute(dataDir)) {
    throw new Error('kafka launcher: cacheDir and dataDir must be absolute paths');
  }
  if (port === controllerPort) throw new Error('kafka launcher: port and controllerPort must differ');
  await assertPortFree(port, 'PLAINTEXT');
  await assertPortFree(controllerPort, 'CONTROLLER');

  const jars = await ensureKafkaLibs(cacheDir, log);
  const log4jConfig = projectFile('infra/kafka/log4j2.xml');
  const logDir = path.join(dataDir, 'logs');
  await mkdir(logDir, { recursive: true });
  const propsFile = path.join(dataDir, 'server.properties');
  await writeFile(propsFile, serverProperties(opts, logDir));

  // Everything but the per-node crash-file path; these flags also key the class-data archive shared by all nodes.
  const sharedJvmArgs = [
    `-Xms${Math.min(256, heapMb)}m`,
    `-Xmx${heapMb}m`,
    // Serial GC and C1 only: fastest start on small dev machines; a test broker never needs C2 peak speed.
    '-XX:+UseSerialGC',
    '-XX:TieredStopAtLevel=1',
    '-XX:+ExitOnOutOfMemoryError',
    '-Djava.awt.headless=true',
    `-Dlog4j2.configurationFile=${log4jConfig}`,
    '-cp',
    jars.join(path.delimiter),
  ];
  const jvmArgs = [
    ...sharedJvmArgs,
    // JVM crash reports default to the working directory; keep them with the broker's data, out of the repo.
    `-XX:ErrorFile=${path.join(dataDir, 'hs_err_pid%p.log')}`,
  ];
  const cds = await planCds(cacheDir, jars, sharedJvmArgs);
  await formatOnce(dataDir, logDir, propsFile, jvmArgs, cds, log);

  try {
    return await launchBroker(opts, jvmArgs, cds, propsFile);
  } catch (err) {
    if (!(err instanceof EarlyExitError) || !(cds.use || cds.dumpTo)) throw err;
    // A damaged archive (or an unwritable dump path) kills the JVM before Kafka logs anything useful;
    // one retry without class-data sharing tells that apart from a broker problem.
    log.warn(
      { err, archive: cds.use ?? cds.dumpTo },
      'Kafka broker failed with class-data sharing; retrying without',
    );
    if (cds.use) await rm(cds.use, { force: true });
    return launchBroker(opts, jvmArgs, { final: cds.final }, propsFile);
  }
}
