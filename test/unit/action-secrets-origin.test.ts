import { describe, expect, it } from 'vitest';
import {
  isCredentialKey,
  maskActions,
  openActions,
  sealActions,
  unmaskActions,
} from '../../services/actions/action-secrets.js';
import { AppError } from '../../services/shared/errors.js';
import { SecretBox, isSealed } from '../../services/shared/secret-box.js';

/**
 * A masked secret (docs/security.md "Secrets at rest") is kept only for the destination it was
 * stored for: same action type, and a URL with the stored URL's origin (scheme, host, port).
 * Credential-named values of a webhook `body` and an automation `data` are secrets like headers.
 */

const box = new SecretBox(Buffer.alloc(32, 7));

interface Config {
  url?: string;
  webhook_url?: string;
  flow_id?: string;
  headers?: Record<string, string>;
  body?: Record<string, unknown>;
  data?: Record<string, unknown>;
}
type Action = { type: string; order: number; config: Config };

const stored: Action[] = [
  {
    type: 'webhook',
    order: 0,
    config: {
      url: 'https://hooks.example.com/in/alerts',
      headers: { 'X-Hook-Auth': 'HOOKHEADERSECRET777', 'X-Plain': 'p' },
      body: { routing_key: 'PDROUTINGKEYSECRET333', event_action: 'trigger', summary: '{{trigger.message}}' },
    },
  },
  {
    type: 'automation',
    order: 1,
    config: {
      flow_id: 'f1',
      webhook_url: 'https://auto.example.com/hooks/flow',
      data: { apiKey: 'AUTODATASECRET666', nested: { auth: { user: 'u', pass: 'AUTOPASS' } }, n: 1 },
    },
  },
];

const read = (): Action[] => maskActions(stored);

/** The 400 an unmaskActions call throws, or a failure when it does not throw one. */
function refusal(f: () => unknown): AppError {
  try {
    f();
  } catch (e) {
    if (e instanceof AppError) return e;
    throw e;
  }
  throw new Error('expected a 400');
}

describe('credential-named values of body and data', () => {
  it('recognises credential keys by their words, not by a substring', () => {
    for (const k of [
      'routing_key',
      'apiKey',
      'api-key',
      'APIKey',
      'token',
      'access_token',
      'accesstoken',
      'X-Auth-Token',
      'client_secret',
      'password',
      'auth',
      'Authorization',
      'integrationkey',
      'signature',
    ])
      expect(isCredentialKey(k), k).toBe(true);
    for (const k of ['author', 'monkey', 'summary', 'event_action', 'keyword', 'flow', 'path'])
      expect(isCredentialKey(k), k).toBe(false);
  });

  it('are masked in reads with the same shape, sealed at rest and opened for the runner', () => {
    const masked = read();
    expect(masked[0]!.config.body).toEqual({
      routing_key: '****',
      event_action: 'trigger',
      summary: '{{trigger.message}}',
    });
    expect(masked[1]!.config.data).toEqual({
      apiKey: '****',
      nested: { auth: { user: '****', pass: '****' } },
      n: 1,
    });
    const sealed = sealActions(stored, box);
    const text = JSON.stringify(sealed);
    for (const s of ['PDROUTINGKEYSECRET333', 'AUTODATASECRET666', 'AUTOPASS']) expect(text).not.toContain(s);
    expect(isSealed(sealed[0]!.config.body!.routing_key)).toBe(true);
    expect(sealed[0]!.config.body!.summary).toBe('{{trigger.message}}');
    expect(openActions(sealed, box)).toEqual(stored);
  });
});

describe('a masked secret follows only its own origin', () => {
  it('saving what was read keeps every secret', () => {
    expect(unmaskActions(read(), stored)).toEqual(stored);
  });

  it('a URL on another host with a masked header is a 400 naming the header', () => {
    const edited = read();
    edited[0]!.config.url = 'https://attacker.example.net/in/alerts';
    edited[0]!.config.headers!['X-Plain'] = 'p';
    edited[0]!.config.body!.routing_key = 'NEWKEY';
    const err = refusal(() => unmaskActions(edited, stored));
    expect(err.status).toBe(400);
    expect(err.code).toBe('VALIDATION_ERROR');
    expect(err.message).toBe(
      "actions.0.config.headers.X-Hook-Auth is masked (****); enter its value again when the URL's " +
        'origin (scheme, host or port) changes',
    );
    expect(err.details).toEqual({
      'body.actions.0.config.headers': expect.stringMatching(/^X-Hook-Auth is masked/),
    });
    expect(err.message).not.toContain('HOOKHEADERSECRET777');
  });

  it('another scheme or port is another origin; a masked body key is named too', () => {
    for (const url of ['http://hooks.example.com/in/alerts', 'https://hooks.example.com:8443/in/alerts']) {
      const edited = read();
      edited[0]!.config.url = url;
      const err = refusal(() => unmaskActions(edited, stored));
      expect(Object.keys(err.details).sort()).toEqual([
        'body.actions.0.config.body',
        'body.actions.0.config.headers',
      ]);
      expect(err.details['body.actions.0.config.body']).toMatch(/^routing_key is masked/);
    }
  });

  it('the same origin on another path keeps the secrets; a default port is the same origin', () => {
    for (const url of ['https://hooks.example.com/other/path?x=1', 'https://HOOKS.example.com:443/in']) {
      const edited = read();
      edited[0]!.config.url = url;
      const kept = unmaskActions(edited, stored)[0]!.config;
      expect(kept.url).toBe(url);
      expect(kept.headers!['X-Hook-Auth']).toBe('HOOKHEADERSECRET777');
      expect(kept.body!.routing_key).toBe('PDROUTINGKEYSECRET333');
    }
  });

  it('values entered again go to the new origin', () => {
    const edited = read();
    edited[0]!.config.url = 'https://other.example.org/hook';
    edited[0]!.config.headers = { 'X-Hook-Auth': 'NEWHEADER', 'X-Plain': 'p' };
    edited[0]!.config.body!.routing_key = 'NEWKEY';
    const kept = unmaskActions(edited, stored)[0]!.config;
    expect(kept).toMatchObject({
      url: 'https://other.example.org/hook',
      headers: { 'X-Hook-Auth': 'NEWHEADER', 'X-Plain': 'p' },
      body: { routing_key: 'NEWKEY' },
    });
  });

  it('an automation hook URL replaced by another host: masked data values are refused', () => {
    const edited = read();
    edited[1]!.config.webhook_url = 'https://auto.attacker.net/hooks/flow';
    const err = refusal(() => unmaskActions(edited, stored));
    expect(err.details).toEqual({
      'body.actions.1.config.data':
        'apiKey, nested.auth.user, nested.auth.pass are masked (****); enter their values again when ' +
        "the URL's origin (scheme, host or port) changes",
    });
    expect(err.message).toBe(`actions.1.config.data: ${err.details['body.actions.1.config.data']}`);
  });

  it('a URL keeping masked parts but changed is refused, not stored with the mask', () => {
    const tokenUrl = 'https://hooks.chat.example/services/T0123456789ABCDEFGHIJ';
    const chat = [{ type: 'chat', order: 0, config: { webhook_url: tokenUrl } }];
    const masked = maskActions(chat);
    expect(masked[0]!.config.webhook_url).toBe('https://hooks.chat.example/services/****');
    expect(unmaskActions(masked, chat)[0]!.config.webhook_url).toBe(tokenUrl);
    const moved = [{ ...masked[0]!, config: { webhook_url: 'https://evil.example/services/****' } }];
    expect(refusal(() => unmaskActions(moved, chat)).details).toEqual({
      'body.actions.0.config.webhook_url':
        'has masked parts (****); enter the whole URL again when you change it',
    });
  });

  it('a masked value with nothing stored behind it (create, a new header, another type) is refused', () => {
    expect(refusal(() => unmaskActions(read(), [])).details).toMatchObject({
      'body.actions.0.config.headers': expect.stringContaining('no stored value stands behind them'),
    });
    const edited = read();
    edited[0]!.config.headers = { ...edited[0]!.config.headers, 'X-New': '****' };
    expect(refusal(() => unmaskActions(edited, stored)).details).toEqual({
      'body.actions.0.config.headers':
        'X-New is masked (****) but no stored value stands behind it; enter its value',
    });
  });

  it('a reorder keeps each action its own secrets', () => {
    const two: Action[] = [
      stored[0]!,
      {
        type: 'webhook',
        order: 1,
        config: { url: 'https://second.example.com/h', headers: { 'X-Hook-Auth': 'SECONDSECRET' } },
      },
    ];
    const swapped = maskActions(two).reverse();
    const kept = unmaskActions(swapped, two);
    expect(kept[0]!.config.headers).toEqual({ 'X-Hook-Auth': 'SECONDSECRET' });
    expect(kept[1]!.config.headers!['X-Hook-Auth']).toBe('HOOKHEADERSECRET777');
    expect(kept[1]!.config.url).toBe('https://hooks.example.com/in/alerts');
  });
});
