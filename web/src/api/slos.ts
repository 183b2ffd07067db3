/**
 * Typed calls of the release and SLO pages: the impact of a deployment event
 * (docs/releases.md) and the SLO resource with its status (docs/slos.md). Types come from the
 * API's schemas (types only).
 */
import type { FromSchema } from 'json-schema-to-ts';
import type {
  releaseImpactSchema,
  releaseSettingsSchema,
  releaseSettingsUpdateSchema,
  sloCreateSchema,
  sloSchema,
  sloStatusSchema,
} from '../../../schemas/slo.schema';
import { api } from './client';
import type { EventMarker, List } from './types';

export type ReleaseImpact = FromSchema<typeof releaseImpactSchema>;
export type EndpointImpact = ReleaseImpact['endpoints'][number];
export type Verdict = EndpointImpact['verdict'];
/** A bucket's release impact windows in minutes (docs/releases.md "Window lengths per bucket"). */
export type ReleaseSettings = FromSchema<typeof releaseSettingsSchema>;
export type ReleaseSettingsUpdate = FromSchema<typeof releaseSettingsUpdateSchema>;
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

const releaseSettingsPath = (a: string, b: string) =>
  `${acct(a)}/buckets/${encodeURIComponent(b)}/releaseSettings`;

export const releaseSettings = {
  get: (a: string, b: string) => api.get<ReleaseSettings>(releaseSettingsPath(a, b)),
  update: (a: string, b: string, body: ReleaseSettingsUpdate) =>
    api.put<ReleaseSettings>(releaseSettingsPath(a, b), body),
};

export const slos = {
  list: (a: string) => api.get<List<Slo>>(`${acct(a)}/slos`, { limit: 100 }),
  get: (a: string, sid: string) => api.get<Slo>(sloPath(a, sid)),
  create: (a: string, body: SloBody) => api.post<Slo>(`${acct(a)}/slos`, body),
  update: (a: string, sid: string, body: SloBody) => api.put<Slo>(sloPath(a, sid), body),
  remove: (a: string, sid: string) => api.del<{ sid: string; deleted: boolean }>(sloPath(a, sid)),
  status: (a: string, sid: string) => api.get<SloStatus>(`${sloPath(a, sid)}/status`),
};
