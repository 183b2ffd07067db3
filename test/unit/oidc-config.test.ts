import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { claimValue, OidcSignIn, roleFromClaims } from '../../services/api/auth/oidc.service.js';
import { parseConfig, parseRoleMap, type OidcConfig } from '../../services/shared/config.js';

const base = { OIDC_ISSUER_URL: 'https://idp.example.com', OIDC_CLIENT_ID: 'tapline' };

function oidc(env: Record<string, string>): OidcConfig {
  const o = parseConfig({ ...base, ...env }).oidc;
  if (!o) throw new Error('OIDC is off');
  return o;
}

/** The OIDC_* settings (docs/auth.md "Single sign-on") and the mapping of claims to roles. */
describe('OIDC configuration', () => {
  it('is off without an issuer and a client id, and refuses half a configuration', () => {
    expect(parseConfig({}).oidc).toBeUndefined();
    expect(() => parseConfig({ OIDC_CLIENT_ID: 'x' })).toThrow(
      /needs both OIDC_ISSUER_URL and OIDC_CLIENT_ID/,
    );
    expect(() => parseConfig({ OIDC_ONLY: 'true' })).toThrow(/needs both/);
  });

  it('derives the redirect URL from PUBLIC_URL, else from HOST and PORT', () => {
    expect(oidc({ PUBLIC_URL: 'https://tapline.example.com/' }).redirectUrl).toBe(
      'https://tapline.example.com/v1/authentication/oidc/callback',
    );
    expect(oidc({ PORT: '9000' }).redirectUrl).toBe('http://127.0.0.1:9000/v1/authentication/oidc/callback');
    expect(oidc({ OIDC_REDIRECT_URL: 'https://sso.example.com/cb' }).redirectUrl).toBe(
      'https://sso.example.com/cb',
    );
  });

  it('takes plain HTTP only for a provider on this machine', () => {
    expect(oidc({ OIDC_ISSUER_URL: 'http://127.0.0.1:4000' }).issuerUrl).toBe('http://127.0.0.1:4000');
    expect(() => oidc({ OIDC_ISSUER_URL: 'http://idp.example.com' })).toThrow(/must be https/);
  });

  it('always asks for openid and email, and lower-cases the allowed domains', () => {
    const o = oidc({ OIDC_SCOPES: 'profile groups', OIDC_ALLOWED_DOMAINS: ' Example.com, @corp.example ' });
    expect(o.scopes).toBe('openid profile groups email');
    expect(o.allowedDomains).toEqual(['example.com', 'corp.example']);
    expect(oidc({ OIDC_DEFAULT_ROLE: 'none' }).defaultRole).toBeNull();
    expect(oidc({ OIDC_DEFAULT_ROLE: 'admin' }).defaultRole).toBe('administrator');
  });

  it('reads the role map as value=role pairs or as JSON, and names a bad entry', () => {
    expect([...parseRoleMap('tapline-admins=admin, devs = user')]).toEqual([
      ['tapline-admins', 'administrator'],
      ['devs', 'user'],
    ]);
    expect([...parseRoleMap('{"Tapline, Admins": "administrator", "a=b": "user"}')]).toEqual([
      ['Tapline, Admins', 'administrator'],
      ['a=b', 'user'],
    ]);
    expect(() => parseRoleMap('devs=owner')).toThrow(/maps "devs" to "owner"/);
    expect(() => parseRoleMap('devs')).toThrow(/entry "devs" is not value=role/);
    expect(() => parseRoleMap('{"a": 1}')).toThrow(/maps "a" to 1/);
    expect(() => parseRoleMap('{nope')).toThrow(/not valid JSON/);
  });
});

describe('roles from claims', () => {
  const o = oidc({ OIDC_ROLE_MAP: 'tapline-admins=admin,tapline-devs=user' });

  it('takes the highest role any value maps to, and null when none maps', () => {
    expect(roleFromClaims(o, { groups: ['tapline-devs', 'x', 'tapline-admins'] })).toBe('administrator');
    expect(roleFromClaims(o, { groups: ['tapline-devs'] })).toBe('user');
    expect(roleFromClaims(o, { groups: 'tapline-admins' })).toBe('administrator');
    expect(roleFromClaims(o, { groups: ['other', 3] })).toBeNull();
    expect(roleFromClaims(o, {})).toBeNull();
  });

  it('reaches nested claims by a dotted name unless a claim has that exact name', () => {
    const claims = { realm_access: { roles: ['a'] }, 'https://tapline.example/roles': ['b'] };
    expect(claimValue(claims, 'realm_access.roles')).toEqual(['a']);
    expect(claimValue(claims, 'https://tapline.example/roles')).toEqual(['b']);
    expect(claimValue(claims, 'realm_access.missing.deeper')).toBeUndefined();
  });
});

describe('who may sign in', () => {
  const log = pino({ level: 'silent' });
  const sso = (env: Record<string, string>) => new OidcSignIn(oidc(env), randomBytes(32), log);
  const verified = { email: 'ada@example.com', email_verified: true, name: 'Ada King Lovelace' };

  it('refuses a claim that maps to no role when OIDC_DEFAULT_ROLE is none', () => {
    const strict = sso({ OIDC_ROLE_MAP: 'admins=admin', OIDC_DEFAULT_ROLE: 'none' });
    expect(() => strict.person({ ...verified, groups: ['other'] })).toThrow(
      expect.objectContaining({ status: 403, code: 'FORBIDDEN', details: { reason: 'role' } }),
    );
    expect(strict.person({ ...verified, groups: ['admins'] })).toEqual({
      email: 'ada@example.com',
      firstName: 'Ada',
      lastName: 'King Lovelace',
      role: 'administrator',
    });
    expect(sso({}).person(verified).role).toBeNull();
  });

  it('refuses no email, an unverified one and a domain outside the list', () => {
    const s = sso({ OIDC_ALLOWED_DOMAINS: 'example.com', OIDC_PROVIDER_NAME: 'Okta' });
    const reason = (claims: Record<string, unknown>) => {
      try {
        s.person(claims);
        return 'accepted';
      } catch (err) {
        return (err as { details: { reason: string } }).details.reason;
      }
    };
    expect(reason({ email_verified: true })).toBe('email');
    expect(reason({ ...verified, email_verified: false })).toBe('unverified');
    expect(reason({ ...verified, email: 'ada@eu.example.com' })).toBe('domain');
    expect(reason({ ...verified, email: 'Ada@EXAMPLE.com' })).toBe('accepted');
    expect(reason({ email: 'ada@example.com' })).toBe('accepted');
  });
});
