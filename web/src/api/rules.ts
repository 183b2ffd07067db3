/**
 * Typed calls of the rules pages: exclusion and redaction rules, their previews (computed by the
 * API with the processor's code, docs/rules.md "Previewing a rule") and a bucket's SDK settings.
 * Types come from the API's schemas (types only).
 */
import type { FromSchema } from 'json-schema-to-ts';
import type {
  bucketSdkSettingsSchema,
  criteriaExclusionSchema,
  criteriaExclusionCreateSchema,
  exclusionCreateSchema,
  exclusionPreviewSchema,
  exclusionSchema,
  sensitiveRedactionSchema,
  sensitiveRedactionCreateSchema,
  redactionCreateSchema,
  redactionPreviewSchema,
  redactionSchema,
  redactionTypesSchema,
  sdkSettingValuesSchema,
  sdkSettingsUpdateSchema,
} from '../../../schemas/rules.schema';
import { api } from './client';
import type { List } from './types';

export type Exclusion = FromSchema<typeof exclusionSchema>;
export type ExclusionInput = FromSchema<typeof exclusionCreateSchema>;
export type Redaction = FromSchema<typeof redactionSchema>;
export type RedactionInput = FromSchema<typeof redactionCreateSchema>;
/** Content rules (docs/rules.md "Shape A rules"): search-criteria exclusions, sensitive-data redactions. */
export type CriteriaExclusion = FromSchema<typeof criteriaExclusionSchema>;
export type CriteriaExclusionInput = FromSchema<typeof criteriaExclusionCreateSchema>;
export type SensitiveRedaction = FromSchema<typeof sensitiveRedactionSchema>;
export type SensitiveRedactionInput = FromSchema<typeof sensitiveRedactionCreateSchema>;
export type RedactionTypes = FromSchema<typeof redactionTypesSchema>;
/** A rule as the lists answer it: each in the shape it was created in. */
export type AnyExclusion = Exclusion | CriteriaExclusion;
export type AnyRedaction = Redaction | SensitiveRedaction;
export const isCriteriaExclusion = (x: AnyExclusion): x is CriteriaExclusion => 'criteria' in x;
export const isSensitiveRedaction = (x: AnyRedaction): x is SensitiveRedaction => 'level' in x;
export type ExclusionPreview = FromSchema<typeof exclusionPreviewSchema>;
export type RedactionPreview = FromSchema<typeof redactionPreviewSchema>;
export type SdkSettingValues = FromSchema<typeof sdkSettingValuesSchema>;
export type SdkSettingsUpdate = FromSchema<typeof sdkSettingsUpdateSchema>;
export type BucketSdkSettings = FromSchema<
  typeof bucketSdkSettingsSchema,
  { references: [typeof sdkSettingValuesSchema] }
>;

/** The sample a preview runs on: a pasted record, or a stored request of a bucket. */
export type PreviewSource =
  { record: Record<string, unknown>; bucketSid?: string } | { bucketSid: string; requestSid: string };

const acct = (a: string) => `/v1/accounts/${encodeURIComponent(a)}`;
const one = (a: string, kind: string, sid: string) => `${acct(a)}/${kind}/${encodeURIComponent(sid)}`;

export const exclusions = {
  list: (a: string) =>
    api.get<List<AnyExclusion>>(`${acct(a)}/exclusions`, { limit: 100, sort: 'createdAt', order: 'asc' }),
  get: (a: string, sid: string) => api.get<AnyExclusion>(one(a, 'exclusions', sid)),
  createCriteria: (a: string, body: CriteriaExclusionInput) =>
    api.post<CriteriaExclusion>(`${acct(a)}/exclusions`, body),
  updateCriteria: (a: string, sid: string, body: CriteriaExclusionInput & { enabled: boolean }) =>
    api.put<CriteriaExclusion>(one(a, 'exclusions', sid), body),
  create: (a: string, body: ExclusionInput) => api.post<Exclusion>(`${acct(a)}/exclusions`, body),
  update: (a: string, sid: string, body: ExclusionInput & { isActive: boolean }) =>
    api.put<Exclusion>(one(a, 'exclusions', sid), body),
  remove: (a: string, sid: string) => api.del<{ sid: string; deleted: boolean }>(one(a, 'exclusions', sid)),
  preview: (a: string, rule: ExclusionInput, source: PreviewSource) =>
    api.post<ExclusionPreview>(`${acct(a)}/exclusions/preview`, { rule, ...source }),
};

export const redactions = {
  list: (a: string) =>
    api.get<List<AnyRedaction>>(`${acct(a)}/redactions`, { limit: 100, sort: 'createdAt', order: 'asc' }),
  get: (a: string, sid: string) => api.get<AnyRedaction>(one(a, 'redactions', sid)),
  createSensitive: (a: string, body: SensitiveRedactionInput) =>
    api.post<SensitiveRedaction>(`${acct(a)}/redactions`, body),
  updateSensitive: (a: string, sid: string, body: SensitiveRedactionInput & { enabled: boolean }) =>
    api.put<SensitiveRedaction>(one(a, 'redactions', sid), body),
  /** The predefined types with descriptions and examples, the valid scopes and levels. */
  types: (a: string) => api.get<RedactionTypes>(`${acct(a)}/redactions/types`),
  create: (a: string, body: RedactionInput) => api.post<Redaction>(`${acct(a)}/redactions`, body),
  update: (a: string, sid: string, body: RedactionInput & { isActive: boolean }) =>
    api.put<Redaction>(one(a, 'redactions', sid), body),
  remove: (a: string, sid: string) => api.del<{ sid: string; deleted: boolean }>(one(a, 'redactions', sid)),
  preview: (a: string, rule: RedactionInput, source: PreviewSource) =>
    api.post<RedactionPreview>(`${acct(a)}/redactions/preview`, { rule, ...source }),
};

export const sdkSettings = {
  get: (a: string, b: string) =>
    api.get<BucketSdkSettings>(`${acct(a)}/buckets/${encodeURIComponent(b)}/sdkSettings`),
  update: (a: string, b: string, body: SdkSettingsUpdate) =>
    api.put<BucketSdkSettings>(`${acct(a)}/buckets/${encodeURIComponent(b)}/sdkSettings`, body),
};
