/**
 * Typed calls of the settings pages: API tokens, MCP tokens, the account, SDK settings and the
 * bulk delete of event markers. Token and SDK types come from the API's schemas (types only).
 */
import type { FromSchema } from 'json-schema-to-ts';
import type { accountSchema } from '../../../schemas/account.schema';
import type { sdkSettingsSchema } from '../../../schemas/rules.schema';
import type { apiTokenSchema, mcpTokenSchema } from '../../../schemas/tokens.schema';
import { api } from './client';
import type { List } from './types';

export type ApiToken = FromSchema<typeof apiTokenSchema>;
export type McpToken = FromSchema<typeof mcpTokenSchema>;
export type SdkSettings = FromSchema<typeof sdkSettingsSchema>;

/** `GET /v1/accounts/{a}` (docs/auth.md, "The account"). */
export type Account = FromSchema<typeof accountSchema>;

export interface ApiTokenCreate {
  name: string;
  description?: string;
  scopes: string[];
  expiresAt?: string | null;
  environment?: 'live' | 'test';
  environmentSid?: string | null;
}

const acct = (a: string) => `/v1/accounts/${encodeURIComponent(a)}`;

export const apiTokens = {
  list: (a: string) => api.get<List<ApiToken>>(`${acct(a)}/apiTokens`, { limit: 100, sort: 'createdAt' }),
  create: (a: string, body: ApiTokenCreate) => api.post<ApiToken>(`${acct(a)}/apiTokens`, body),
  update: (a: string, sid: string, body: { name: string; isActive: boolean; description?: string }) =>
    api.put<ApiToken>(`${acct(a)}/apiTokens/${encodeURIComponent(sid)}`, body),
  remove: (a: string, sid: string) =>
    api.del<{ sid: string; deleted: boolean }>(`${acct(a)}/apiTokens/${encodeURIComponent(sid)}`),
};

export const mcpTokens = {
  list: (a: string) => api.get<List<McpToken>>(`${acct(a)}/mcpTokens`, { limit: 100, sort: 'createdAt' }),
  create: (
    a: string,
    body: { name: string; environmentSid: string; bucketSids?: string[]; expiresAt?: string | null },
  ) => api.post<McpToken>(`${acct(a)}/mcpTokens`, body),
  remove: (a: string, sid: string) =>
    api.del<{ sid: string; deleted: boolean }>(`${acct(a)}/mcpTokens/${encodeURIComponent(sid)}`),
};

export const account = {
  get: (a: string) => api.get<Account>(acct(a)),
  update: (a: string, body: { name: string }) => api.put<Account>(acct(a), body),
};

export const sdk = {
  /** What an SDK connected to the bucket receives (`redactAt` picks which redaction rules). */
  settings: (b: string, redactAt: 'client' | 'server') =>
    api.get<SdkSettings>(`/v1/buckets/${encodeURIComponent(b)}/sdk`, { redactAt, clientId: 'dashboard' }),
};

/**
 * Deletes several event markers: one `DELETE` per marker (the API has no bulk call), at most four
 * at a time. Resolves with the sids deleted; rejects with the first error after the others ran.
 */
export const eventsBulk = {
  remove: async (a: string, sids: string[]): Promise<{ deleted: string[] }> => {
    const deleted: string[] = [];
    let failure: unknown = null;
    const queue = [...sids];
    const worker = async () => {
      for (let sid = queue.shift(); sid !== undefined; sid = queue.shift()) {
        try {
          await api.del(`${acct(a)}/events/${encodeURIComponent(sid)}`);
          deleted.push(sid);
        } catch (err) {
          failure ??= err;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(4, sids.length) }, worker));
    if (failure) throw failure;
    return { deleted };
  },
};
