import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  maskActions,
  maskUrl,
  openActions,
  sealActions,
  unmaskActions,
} from '../../services/actions/action-secrets.js';
import { SecretBox, chatUserHash, isSealed, secretsKey } from '../../services/shared/secret-box.js';

const box = new SecretBox(Buffer.alloc(32, 7));
const hook = 'https://hooks.example.com/services/T0123456789ABCDEFGHIJ?token=abc';

describe('SecretBox', () => {
  it('seals with a fresh IV each time and opens back; unsealed values pass through', () => {
    const a = box.seal('s3cret');
    const b = box.seal('s3cret');
    expect(isSealed(a)).toBe(true);
    expect(a).not.toBe(b);
    expect(a).not.toContain('s3cret');
    expect(box.open(a)).toBe('s3cret');
    expect(box.seal(a)).toBe(a);
    expect(box.open('plain')).toBe('plain');
    expect(() => new SecretBox(Buffer.alloc(32, 8)).open(a)).toThrow();
  });

  it('generates a key into DATA_DIR once (0600) and reads it after; SECRETS_KEY wins', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'secrets-'));
    const cfg = { dataDir: dir, secrets: { key: undefined, chatHashKey: undefined } };
    const k1 = secretsKey(cfg);
    expect(k1).toHaveLength(32);
    expect(fs.statSync(path.join(dir, 'secrets.key')).mode & 0o777).toBe(0o600);
    expect(secretsKey(cfg).equals(k1)).toBe(true);
    const hex = 'ab'.repeat(32);
    expect(secretsKey({ ...cfg, secrets: { key: hex, chatHashKey: undefined } }).toString('hex')).toBe(hex);
    fs.rmSync(dir, { recursive: true });
  });

  it('keys the chat hash with CHAT_HASH_KEY when set, else with a key derived from the secrets key', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'secrets-'));
    const derived = { dataDir: dir, secrets: { key: 'cd'.repeat(32), chatHashKey: undefined } };
    const own = { dataDir: dir, secrets: { key: 'cd'.repeat(32), chatHashKey: 'x'.repeat(32) } };
    const h1 = chatUserHash(derived, 'usr_1');
    expect(h1).toMatch(/^[0-9a-f]{64}$/);
    expect(chatUserHash(own, 'usr_1')).not.toBe(h1);
    expect(chatUserHash(derived, 'usr_2')).not.toBe(h1);
    fs.rmSync(dir, { recursive: true });
  });
});

describe('action secrets', () => {
  const actions = [
    {
      type: 'webhook',
      order: 0,
      config: { url: hook, headers: { Authorization: 'Bearer xyz-secret-4d1f' }, body: { a: 1 } },
    },
    { type: 'email', order: 1, config: { to: ['a@example.com'], subject: 'hi' } },
  ];

  it('masks token-like path segments, query values, user info and header values', () => {
    expect(maskUrl(hook)).toBe('https://hooks.example.com/services/****?token=****');
    expect(maskUrl('https://u:p@example.com/short/path')).toBe('https://****@example.com/short/path');
    expect(maskUrl('not a url')).toBe('****');
    const masked = maskActions(actions);
    expect(masked[0]!.config).toEqual({
      url: 'https://hooks.example.com/services/****?token=****',
      headers: { Authorization: '****' },
      body: { a: 1 },
    });
    expect(masked[1]).toEqual(actions[1]);
  });

  it('seals and opens only the secret fields; a value of another key stays sealed', () => {
    const sealed = sealActions(actions, box);
    const text = JSON.stringify(sealed);
    expect(text).not.toContain('T0123456789ABCDEFGHIJ');
    expect(text).not.toContain('xyz-secret-4d1f');
    expect(sealed[1]).toEqual(actions[1]);
    expect(openActions(sealed, box)).toEqual(actions);
    const other = openActions(sealed, new SecretBox(Buffer.alloc(32, 9)));
    expect(isSealed(other[0]!.config.url)).toBe(true);
  });

  it('a masked value sent back keeps the stored secret; a new value replaces it', () => {
    const read = maskActions(actions);
    expect(unmaskActions(read, actions)).toEqual(actions);
    const edited = [
      { ...read[0]!, config: { ...read[0]!.config, headers: { Authorization: 'Bearer new' } } },
    ];
    const kept = unmaskActions(edited, actions);
    expect(kept[0]!.config).toMatchObject({ url: hook, headers: { Authorization: 'Bearer new' } });
    // Another action type at that index: nothing is taken from the stored one, and its masked
    // URL is refused rather than stored as written (test/unit/action-secrets-origin.test.ts).
    const swapped = [{ type: 'chat', order: 0, config: { webhook_url: read[0]!.config.url } }];
    expect(() => unmaskActions(swapped, actions)).toThrow(/webhook_url has masked parts/);
  });
});
