import { describe, expect, it } from 'vitest';
import { ActionError } from '../../services/actions/action.errors.js';
import { parseActions } from '../../services/actions/action.executors.js';
import { checkStatus, sendHttp } from '../../services/actions/http.sender.js';
import { OutboundGuard } from '../../services/actions/outbound-guard.js';
import { MailSender } from '../../services/actions/mail.sender.js';

describe('action runner building blocks', () => {
  it('orders actions by `order`, ties in array order, missing order as 0', () => {
    const actions = parseActions([
      { type: 'chat', order: 2, config: {} },
      { type: 'webhook', config: {} },
      { type: 'email', order: 1, config: {} },
      { type: 'automation', order: 0, config: {} },
      { type: 'webhook', order: -1, config: null },
    ]);
    expect(actions.map((a) => `${a.type}@${a.index}`)).toEqual([
      'webhook@4',
      'webhook@1',
      'automation@3',
      'email@2',
      'chat@0',
    ]);
    expect(actions[0]!.config).toEqual({});
    expect(parseActions('not an array')).toEqual([]);
  });

  it('classifies receiver answers: 2xx ok, 5xx/408/429 retried, other 4xx and 3xx final', () => {
    const status = (statusCode: number) => {
      try {
        checkStatus({ statusCode, bodySnippet: 'x' });
        return 'ok';
      } catch (err) {
        return (err as ActionError).retryable ? 'retry' : 'final';
      }
    };
    expect([200, 204, 500, 503, 408, 429, 400, 404, 301].map(status)).toEqual([
      'ok',
      'ok',
      'retry',
      'retry',
      'retry',
      'retry',
      'final',
      'final',
      'final',
    ]);
  });

  it('retries a webhook whose host name does not resolve (NXDOMAIN, no address, resolver busy)', async () => {
    for (const [code, answers] of [
      ['ENOTFOUND', undefined],
      ['EAI_AGAIN', undefined],
      ['no address', []],
    ] as const) {
      // A resolver outside the system: it fails as the system's would for an unknown name.
      const guard = new OutboundGuard([], async () => {
        if (answers) return [...answers];
        throw Object.assign(new Error('lookup failed'), { code });
      });
      const err = await sendHttp(
        { method: 'POST', url: 'http://hooks.example.test/x', headers: {}, body: '{}' },
        guard,
        new AbortController().signal,
      ).catch((e: unknown) => e);
      expect(err, code).toBeInstanceOf(ActionError);
      expect((err as ActionError).message, code).toContain('cannot resolve hooks.example.test');
      expect((err as ActionError).retryable, code).toBe(true);
    }
  });

  it('fails an email action with a clear, final error when SMTP_URL is not set', async () => {
    const mail = new MailSender({ url: undefined, from: 'Tapline <t@localhost>' }, 1000);
    const err = await mail
      .send({ to: ['a@example.test'], subject: 's', text: 't' }, new AbortController().signal)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ActionError);
    expect((err as ActionError).message).toBe('email is not configured: set SMTP_URL to send email actions');
    expect((err as ActionError).retryable).toBe(false);
  });
});
