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

const base = (a: string, b: string) =>
  `/v1/accounts/${encodeURIComponent(a)}/buckets/${encodeURIComponent(b)}/endpointTemplates`;

export const endpointTemplates = {
  list: (a: string, b: string) => api.get<List<EndpointTemplate>>(base(a, b)),
  create: (a: string, b: string, body: EndpointTemplateInput) => api.post<EndpointTemplate>(base(a, b), body),
  remove: (a: string, b: string, sid: string) =>
    api.del<{ sid: string; deleted: boolean }>(`${base(a, b)}/${encodeURIComponent(sid)}`),
  suggestions: (a: string, b: string, q: { startDate: string; endDate: string; environmentSid?: string }) =>
    api.get<EndpointTemplateSuggestions>(`${base(a, b)}/suggestions`, q),
};
