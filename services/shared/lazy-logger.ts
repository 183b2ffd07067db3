import type { Bindings, ChildLoggerOptions, Level, LogFn, Logger } from 'pino';

/** The levels with a log method; `silent` has one that does nothing. */
const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;

/**
 * A request's logger that becomes a real pino child only when something is logged through it.
 * Fastify makes a child logger per request (`req.log`, bound to the request id); pino runs the
 * bindings through its redaction on every `child()`, a visible cost per request in the ingest's
 * profile (bench/README.md), while the service logs nothing for a request that succeeds.
 */
export class LazyChildLogger {
  private real: Logger | undefined;

  // One method per level, on the prototype (below): a call below the level makes no child.
  declare fatal: LogFn;
  declare error: LogFn;
  declare warn: LogFn;
  declare info: LogFn;
  declare debug: LogFn;
  declare trace: LogFn;

  static {
    for (const level of LEVELS) {
      LazyChildLogger.prototype[level] = function (this: LazyChildLogger, ...args: Parameters<LogFn>) {
        if (this.parent.isLevelEnabled(level)) this.logger[level](...args);
      };
    }
  }

  constructor(
    private readonly parent: Logger,
    private readonly bindingsOf: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get logger(): Logger {
    return (this.real ??= this.parent.child(this.bindingsOf, this.options));
  }

  get level(): string {
    return this.real?.level ?? this.parent.level;
  }

  set level(value: string) {
    this.logger.level = value;
  }

  isLevelEnabled(level: Level): boolean {
    return this.parent.isLevelEnabled(level);
  }

  bindings(): Bindings {
    return this.logger.bindings();
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.logger.child(bindings, options);
  }

  silent(): void {
    // pino's `silent` level method does nothing either
  }
}
