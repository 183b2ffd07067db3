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

const acct = (accountSid: string) => `/v1/accounts/${encodeURIComponent(accountSid)}`;
const sloPath = (accountSid: string, sid: string) => `${acct(accountSid)}/slos/${encodeURIComponent(sid)}`;

export const releases = {
  /** The deployment event itself (GET …/events/{eventSid}). */
  event: (accountSid: string, eventSid: string) =>
    api.get<EventMarker>(`${acct(accountSid)}/events/${encodeURIComponent(eventSid)}`),
  impact: (accountSid: string, eventSid: string) =>
    api.get<ReleaseImpact>(`${acct(accountSid)}/events/${encodeURIComponent(eventSid)}/impact`),
};

const releaseSettingsPath = (a: string, b: string) =>
  `${acct(a)}/buckets/${encodeURIComponent(b)}/releaseSettings`;

export const releaseSettings = {
  get: (a: string, b: string) => api.get<ReleaseSettings>(releaseSettingsPath(a, b)),
  update: (a: string, b: string, body: ReleaseSettingsUpdate) =>
    api.put<ReleaseSettings>(releaseSettingsPath(a, b), body),
};

export const slos = {
  list: (accountSid: string) => api.get<List<Slo>>(`${acct(accountSid)}/slos`, { limit: 100 }),
  get: (accountSid: string, sid: string) => api.get<Slo>(sloPath(accountSid, sid)),
  create: (accountSid: string, body: SloBody) => api.post<Slo>(`${acct(accountSid)}/slos`, body),
  update: (accountSid: string, sid: string, body: SloBody) => api.put<Slo>(sloPath(accountSid, sid), body),
  remove: (accountSid: string, sid: string) =>
    api.del<{ sid: string; deleted: boolean }>(sloPath(accountSid, sid)),
  status: (accountSid: string, sid: string) => api.get<SloStatus>(`${sloPath(accountSid, sid)}/status`),
};
