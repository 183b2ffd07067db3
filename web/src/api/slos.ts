/**
 * Typed calls of the release and SLO pages: the impact of a deployment event
 * (docs/releases.md) and the SLO resource with its status (docs/slos.md). Types come from the
 * API's schemas (types only).
 */
import type { FromSchema } from 'json-schema-to-ts';
import type {
  releaseImpactSchema,
  sloCreateSchema,
  sloSchema,
  sloStatusSchema,
} from '../../../schemas/slo.schema';
import { api } from './client';
import type { EventMarker, List } from './types';

export type ReleaseImpact = FromSchema<typeof releaseImpactSchema>;
export type EndpointImpact = ReleaseImpact['endpoints'][number];
export type Verdict = EndpointImpact['verdict'];
export type Slo = FromSchema<typeof sloSchema>;
export type SloBody = FromSchema<typeof sloCreateSchema>;
export type SloStatus = FromSchema<typeof sloStatusSchema>;

const acct = (a: string) => `/v1/accounts/${encodeURIComponent(a)}`;
const sloPath = (a: string, sid: string) => `${acct(a)}/slos/${encodeURIComponent(sid)}`;

export const releases = {
  /** The deployment event itself (GET …/events/{eventSid}). */
  event: (a: string, eventSid: string) =>
    api.get<EventMarker>(`${acct(a)}/events/${encodeURIComponent(eventSid)}`),
  impact: (a: string, eventSid: string) =>
    api.get<ReleaseImpact>(`${acct(a)}/events/${encodeURIComponent(eventSid)}/impact`),
};

export const slos = {
  list: (a: string) => api.get<List<Slo>>(`${acct(a)}/slos`, { limit: 100 }),
  get: (a: string, sid: string) => api.get<Slo>(sloPath(a, sid)),
  create: (a: string, body: SloBody) => api.post<Slo>(`${acct(a)}/slos`, body),
  update: (a: string, sid: string, body: SloBody) => api.put<Slo>(sloPath(a, sid), body),
  remove: (a: string, sid: string) => api.del<{ sid: string; deleted: boolean }>(sloPath(a, sid)),
  status: (a: string, sid: string) => api.get<SloStatus>(`${sloPath(a, sid)}/status`),
};
