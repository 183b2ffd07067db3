import type { Bindings, ChildLoggerOptions, Level, Logger } from 'pino';

/**
 * A request's logger that becomes a real pino child only when something is logged through it.
 * Fastify makes a child logger per request (`req.log`, bound to the request id); pino runs the
 * bindings through its redaction on every `child()`, a visible cost per request in the ingest's
 * profile (bench/README.md), while the service logs nothing for a request that succeeds.
 */
export class LazyChildLogger {
  private real: Logger | undefined;

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

  fatal(...args: Parameters<Logger['fatal']>): void {
    if (this.parent.isLevelEnabled('fatal')) this.logger.fatal(...args);
  }

  error(...args: Parameters<Logger['error']>): void {
    if (this.parent.isLevelEnabled('error')) this.logger.error(...args);
  }

  warn(...args: Parameters<Logger['warn']>): void {
    if (this.parent.isLevelEnabled('warn')) this.logger.warn(...args);
  }

  info(...args: Parameters<Logger['info']>): void {
    if (this.parent.isLevelEnabled('info')) this.logger.info(...args);
  }

  debug(...args: Parameters<Logger['debug']>): void {
    if (this.parent.isLevelEnabled('debug')) this.logger.debug(...args);
  }

  trace(...args: Parameters<Logger['trace']>): void {
    if (this.parent.isLevelEnabled('trace')) this.logger.trace(...args);
  }

  silent(): void {
    // pino's `silent` level method does nothing either
  }
}
