/**
 * Typed calls of a bucket's endpoint template rules and their suggestions (docs/processing.md,
 * "Endpoint templates"). Types come from the API's schemas (types only).
 */
import type { FromSchema } from 'json-schema-to-ts';
import type {
  endpointTemplateCreateSchema,
  endpointTemplateSchema,
  endpointTemplateSuggestionsSchema,
} from '../../../schemas/endpoint-template.schema';
import { api } from './client';
import type { List } from './types';

export type EndpointTemplate = FromSchema<typeof endpointTemplateSchema>;
export type EndpointTemplateInput = FromSchema<typeof endpointTemplateCreateSchema>;
export type EndpointTemplateSuggestions = FromSchema<typeof endpointTemplateSuggestionsSchema>;
export type EndpointTemplateSuggestion = EndpointTemplateSuggestions['suggestions'][number];

const base = (accountSid: string, bucketSid: string) =>
  `/v1/accounts/${encodeURIComponent(accountSid)}/buckets/${encodeURIComponent(bucketSid)}/endpointTemplates`;

export const endpointTemplates = {
  list: (accountSid: string, bucketSid: string) =>
    api.get<List<EndpointTemplate>>(base(accountSid, bucketSid)),
  create: (accountSid: string, bucketSid: string, body: EndpointTemplateInput) =>
    api.post<EndpointTemplate>(base(accountSid, bucketSid), body),
  remove: (accountSid: string, bucketSid: string, sid: string) =>
    api.del<{ sid: string; deleted: boolean }>(`${base(accountSid, bucketSid)}/${encodeURIComponent(sid)}`),
  suggestions: (
    accountSid: string,
    bucketSid: string,
    q: { startDate: string; endDate: string; environmentSid?: string },
  ) => api.get<EndpointTemplateSuggestions>(`${base(accountSid, bucketSid)}/suggestions`, q),
};
