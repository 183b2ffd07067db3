import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { LazyChildLogger } from '../../services/shared/lazy-logger.js';
import { REDACT_PATHS, routeProcessWarnings } from '../../services/shared/logger.js';

function capture(level = 'info') {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString().split('\n'))
        if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  const root = pino({ level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, stream);
  return { root, lines };
}

describe('LazyChildLogger (per-request logger made on first use)', () => {
  it('makes no pino child until a line is written at an enabled level', () => {
    const { root, lines } = capture('info');
    let children = 0;
    const child = root.child.bind(root);
    root.child = ((...args: Parameters<typeof root.child>) => {
      children++;
      return child(...args);
    }) as typeof root.child;
    const log = new LazyChildLogger(root, { reqId: 'r1' }, {});
    log.debug({ a: 1 }, 'below the level');
    log.trace('below the level');
    expect(children).toBe(0);
    expect(log.level).toBe('info');
    log.info({ a: 2 }, 'written');
    log.error({ a: 3 }, 'written too');
    expect(children).toBe(1);
    expect(lines.map((l) => [l.reqId, l.a, l.msg])).toEqual([
      ['r1', 2, 'written'],
      ['r1', 3, 'written too'],
    ]);
  });

  it('keeps the root redaction and the request binding in every line and in its own children', () => {
    const { root, lines } = capture('debug');
    const log = new LazyChildLogger(root, { reqId: 'r2' }, {});
    log.warn({ token: 'tl_secret', headers: { authorization: 'Bearer x' } }, 'with secrets');
    log.child({ module: 'm' }).info('nested');
    expect(lines[0]).toMatchObject({
      reqId: 'r2',
      token: '[redacted]',
      headers: { authorization: '[redacted]' },
    });
    expect(JSON.stringify(lines)).not.toContain('tl_secret');
    expect(lines[1]).toMatchObject({ reqId: 'r2', module: 'm', msg: 'nested' });
    expect(log.bindings()).toEqual({ reqId: 'r2' });
  });
});

describe('process warnings in the log', () => {
  const saved = process.listeners('warning');
  afterEach(() => {
    process.removeAllListeners('warning');
    for (const l of saved) process.on('warning', l);
  });

  it("writes warnings as log entries; kafkajs's negative timeout (kafkajs#1751) only at debug", async () => {
    const { root, lines } = capture('debug');
    routeProcessWarnings(root);
    expect(process.listeners('warning')).toHaveLength(1);
    process.emitWarning('something is deprecated', { type: 'DeprecationWarning', code: 'DEP0999' });
    const kafkajs = Object.assign(new Error('-1795826664624 is a negative number.'), {
      name: 'TimeoutNegativeWarning',
    });
    kafkajs.stack = `TimeoutNegativeWarning: -1795826664624 is a negative number.
    at RequestQueue.scheduleCheckPendingRequests (/app/node_modules/kafkajs/src/network/requestQueue/index.js:317:37)`;
    process.emitWarning(kafkajs);
    const other = Object.assign(new Error('-5 is a negative number.'), { name: 'TimeoutNegativeWarning' });
    process.emitWarning(other);
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.map((l) => [l.level, l.warning, l.code ?? null])).toEqual([
      [40, 'DeprecationWarning', 'DEP0999'],
      [20, 'TimeoutNegativeWarning', null],
      [40, 'TimeoutNegativeWarning', null],
    ]);
    expect(lines[0]!.msg).toBe('something is deprecated');
  });
});
