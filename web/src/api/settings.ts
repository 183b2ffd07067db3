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

const acct = (accountSid: string) => `/v1/accounts/${encodeURIComponent(accountSid)}`;

export const apiTokens = {
  list: (accountSid: string) =>
    api.get<List<ApiToken>>(`${acct(accountSid)}/apiTokens`, { limit: 100, sort: 'createdAt' }),
  create: (accountSid: string, body: ApiTokenCreate) =>
    api.post<ApiToken>(`${acct(accountSid)}/apiTokens`, body),
  update: (
    accountSid: string,
    sid: string,
    body: { name: string; isActive: boolean; description?: string },
  ) => api.put<ApiToken>(`${acct(accountSid)}/apiTokens/${encodeURIComponent(sid)}`, body),
  remove: (accountSid: string, sid: string) =>
    api.del<{ sid: string; deleted: boolean }>(`${acct(accountSid)}/apiTokens/${encodeURIComponent(sid)}`),
};

export const mcpTokens = {
  list: (accountSid: string) =>
    api.get<List<McpToken>>(`${acct(accountSid)}/mcpTokens`, { limit: 100, sort: 'createdAt' }),
  create: (
    accountSid: string,
    body: { name: string; environmentSid: string; bucketSids?: string[]; expiresAt?: string | null },
  ) => api.post<McpToken>(`${acct(accountSid)}/mcpTokens`, body),
  remove: (accountSid: string, sid: string) =>
    api.del<{ sid: string; deleted: boolean }>(`${acct(accountSid)}/mcpTokens/${encodeURIComponent(sid)}`),
};

export const account = {
  get: (accountSid: string) => api.get<Account>(acct(accountSid)),
  update: (accountSid: string, body: { name: string }) => api.put<Account>(acct(accountSid), body),
};

export const sdk = {
  /** What an SDK connected to the bucket receives (`redactAt` picks which redaction rules). */
  settings: (bucketSid: string, redactAt: 'client' | 'server') =>
    api.get<SdkSettings>(`/v1/buckets/${encodeURIComponent(bucketSid)}/sdk`, {
      redactAt,
      clientId: 'dashboard',
    }),
};

/**
 * Deletes several event markers: one `DELETE` per marker (the API has no bulk call), at most four
 * at a time. Resolves with the sids deleted; rejects with the first error after the others ran.
 */
export const eventsBulk = {
  remove: async (accountSid: string, sids: string[]): Promise<{ deleted: string[] }> => {
    const deleted: string[] = [];
    let failure: unknown = null;
    const queue = [...sids];
    const worker = async () => {
      for (let sid = queue.shift(); sid !== undefined; sid = queue.shift()) {
        try {
          await api.del(`${acct(accountSid)}/events/${encodeURIComponent(sid)}`);
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
