import { pino, type Logger } from 'pino';
import { config } from './config.js';

/**
 * Paths pino blanks before a line is written: every credential the service handles.
 * NOTE: pino redaction matches exact paths; add new token-bearing fields here.
 */
export const REDACT_PATHS = [
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'request.headers.authorization',
  'req.headers.cookie',
  // Outbound and nested header objects (an error carrying the request it failed on).
  'headers.Authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
  '*.headers.cookie',
  '*.*.headers.authorization',
  '*.*.headers.Authorization',
  'token',
  'apiToken',
  'sessionToken',
  'password',
  'mcpToken',
  '*.token',
  '*.*.token',
  '*.mcpToken',
  '*.apiToken',
  '*.sessionToken',
  '*.password',
  'config.password',
  'databaseUrl',
  // the config's SECRETS_KEY / CHAT_HASH_KEY (docs/security.md "Secrets at rest")
  'secrets',
  '*.secrets',
  'smtpUrl',
];

let root: Logger | undefined;

export function rootLogger(): Logger {
  if (!root) {
    const cfg = config();
    root = pino({
      level: cfg.logLevel,
      base: { service: 'tapline' },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      // One line per entry for a person at a terminal: time, level, module, message, fields.
      ...(cfg.logPretty
        ? {
            transport: {
              target: 'pino-pretty',
              options: {
                singleLine: true,
                ignore: 'pid,hostname,service,module',
                translateTime: 'HH:MM:ss.l',
                messageFormat: '{if module}{module}: {end}{msg}',
              },
            },
          }
        : {}),
    });
  }
  return root;
}

/** A child logger per module, as `logger('processor')`. */
export function logger(module: string): Logger {
  return rootLogger().child({ module });
}

/**
 * Process warnings (`process.emitWarning`: deprecations, MaxListenersExceeded, …) written as log
 * entries instead of Node's plain stderr lines, so they reach the same JSON log as the rest.
 * kafkajs 2.2.4 schedules its request-queue check with `setTimeout(fn, throttledUntil - Date.now())`
 * while `throttledUntil` is 0, which Node 24 reports as a TimeoutNegativeWarning at every client
 * connect (tulios/kafkajs#1751, unreleased fix); Node runs such a timer after 1 ms, which is what
 * kafkajs means, so that one warning is logged at debug level.
 */
export function routeProcessWarnings(log: Logger): void {
  process.removeAllListeners('warning');
  process.on('warning', (w: Error & { code?: string }) => {
    const entry = { warning: w.name, code: w.code, stack: w.stack };
    if (w.name === 'TimeoutNegativeWarning' && w.stack?.includes('kafkajs'))
      log.debug(entry, 'kafkajs scheduled a negative timeout (tulios/kafkajs#1751); Node runs it after 1 ms');
    else log.warn(entry, w.message);
  });
}

export type { Logger };
