import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type KoaContextWithOIDC } from 'oidc-provider';

/** A person at the test provider: the claims it releases for them. */
export interface ProviderPerson {
  email: string;
  email_verified: boolean;
  given_name?: string;
  family_name?: string;
  groups?: string[];
}

export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** the people, by login; a test may change one's claims between sign-ins */
  people: Map<string, ProviderPerson>;
  close(): Promise<void>;
}

/**
 * A real OpenID provider for the tests: `oidc-provider` (the OpenID-certified implementation) on a
 * loopback port, with one confidential client registered for `redirectUris`, PKCE required and
 * its development login pages (any password; the login names a person of `people`). The client
 * is first-party: its grant of the scopes is given without a consent page.
 */
export async function startTestProvider(redirectUris: string[]): Promise<TestProvider> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = 'tapline-test';
  const clientSecret = randomBytes(24).toString('hex');
  const people = new Map<string, ProviderPerson>();
  const scopes = 'openid email profile groups';
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: redirectUris,
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    pkce: { required: () => true },
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name', 'given_name', 'family_name'],
      groups: ['groups'],
    },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    features: { devInteractions: { enabled: true } },
    findAccount: (_ctx: KoaContextWithOIDC, id: string) => {
      const person = people.get(id);
      if (!person) return undefined;
      return { accountId: id, claims: () => ({ sub: id, ...person }) };
    },
    async loadExistingGrant(ctx: KoaContextWithOIDC) {
      const session = ctx.oidc.session;
      const client = ctx.oidc.client;
      if (!session?.accountId || !client) return undefined;
      const known = session.grantIdFor(client.clientId);
      if (known) return ctx.oidc.provider.Grant.find(known);
      const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId });
      grant.addOIDCScope(scopes);
      await grant.save();
      return grant;
    },
  });
  server.on('request', provider.callback());
  return {
    issuer,
    clientId,
    clientSecret,
    people,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A fetch that keeps cookies per host (and port), follows nothing by itself and can walk a chain
 * of redirects: what a browser does between the service and the provider, without the browser.
 */
export class CookieClient {
  private readonly jar = new Map<string, Map<string, string>>();

  constructor(private readonly headers: Record<string, string> = {}) {}

  cookie(url: string, name: string): string | undefined {
    return this.jar.get(new URL(url).host)?.get(name);
  }

  async fetch(url: string, init: { method?: string; form?: Record<string, string> } = {}): Promise<Response> {
    const u = new URL(url);
    const cookies = [...(this.jar.get(u.host) ?? new Map<string, string>())]
      .map(([k, v]) => `${k}=${v}`)
      .join('; ');
    const res = await fetch(url, {
      method: init.method ?? (init.form ? 'POST' : 'GET'),
      redirect: 'manual',
      headers: {
        ...this.headers,
        ...(cookies ? { cookie: cookies } : {}),
        ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
      body: init.form ? new URLSearchParams(init.form).toString() : undefined,
    });
    const jar = this.jar.get(u.host) ?? new Map<string, string>();
    this.jar.set(u.host, jar);
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at).trim();
      const value = pair.slice(at + 1).trim();
      if (!value || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) jar.delete(name);
      else jar.set(name, value);
    }
    return res;
  }

  /** Follows redirects from `url` while `until` says to go on; the last response. */
  async follow(url: string, until: (next: URL) => boolean = () => true): Promise<Response> {
    let res = await this.fetch(url);
    for (let i = 0; i < 20 && res.status >= 300 && res.status < 400; i++) {
      const next = new URL(res.headers.get('location') ?? '', url);
      if (!until(next)) return res;
      url = next.href;
      res = await this.fetch(url);
    }
    return res;
  }
}
