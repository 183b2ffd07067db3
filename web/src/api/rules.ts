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

const acct = (accountSid: string) => `/v1/accounts/${encodeURIComponent(accountSid)}`;
const one = (accountSid: string, kind: string, sid: string) =>
  `${acct(accountSid)}/${kind}/${encodeURIComponent(sid)}`;

export const exclusions = {
  list: (accountSid: string) =>
    api.get<List<AnyExclusion>>(`${acct(accountSid)}/exclusions`, {
      limit: 100,
      sort: 'createdAt',
      order: 'asc',
    }),
  get: (accountSid: string, sid: string) => api.get<AnyExclusion>(one(accountSid, 'exclusions', sid)),
  createCriteria: (accountSid: string, body: CriteriaExclusionInput) =>
    api.post<CriteriaExclusion>(`${acct(accountSid)}/exclusions`, body),
  updateCriteria: (accountSid: string, sid: string, body: CriteriaExclusionInput & { enabled: boolean }) =>
    api.put<CriteriaExclusion>(one(accountSid, 'exclusions', sid), body),
  create: (accountSid: string, body: ExclusionInput) =>
    api.post<Exclusion>(`${acct(accountSid)}/exclusions`, body),
  update: (accountSid: string, sid: string, body: ExclusionInput & { isActive: boolean }) =>
    api.put<Exclusion>(one(accountSid, 'exclusions', sid), body),
  remove: (accountSid: string, sid: string) =>
    api.del<{ sid: string; deleted: boolean }>(one(accountSid, 'exclusions', sid)),
  preview: (accountSid: string, rule: ExclusionInput, source: PreviewSource) =>
    api.post<ExclusionPreview>(`${acct(accountSid)}/exclusions/preview`, { rule, ...source }),
};

export const redactions = {
  list: (accountSid: string) =>
    api.get<List<AnyRedaction>>(`${acct(accountSid)}/redactions`, {
      limit: 100,
      sort: 'createdAt',
      order: 'asc',
    }),
  get: (accountSid: string, sid: string) => api.get<AnyRedaction>(one(accountSid, 'redactions', sid)),
  createSensitive: (accountSid: string, body: SensitiveRedactionInput) =>
    api.post<SensitiveRedaction>(`${acct(accountSid)}/redactions`, body),
  updateSensitive: (accountSid: string, sid: string, body: SensitiveRedactionInput & { enabled: boolean }) =>
    api.put<SensitiveRedaction>(one(accountSid, 'redactions', sid), body),
  /** The predefined types with descriptions and examples, the valid scopes and levels. */
  types: (accountSid: string) => api.get<RedactionTypes>(`${acct(accountSid)}/redactions/types`),
  create: (accountSid: string, body: RedactionInput) =>
    api.post<Redaction>(`${acct(accountSid)}/redactions`, body),
  update: (accountSid: string, sid: string, body: RedactionInput & { isActive: boolean }) =>
    api.put<Redaction>(one(accountSid, 'redactions', sid), body),
  remove: (accountSid: string, sid: string) =>
    api.del<{ sid: string; deleted: boolean }>(one(accountSid, 'redactions', sid)),
  preview: (accountSid: string, rule: RedactionInput, source: PreviewSource) =>
    api.post<RedactionPreview>(`${acct(accountSid)}/redactions/preview`, { rule, ...source }),
};

export const sdkSettings = {
  get: (accountSid: string, bucketSid: string) =>
    api.get<BucketSdkSettings>(`${acct(accountSid)}/buckets/${encodeURIComponent(bucketSid)}/sdkSettings`),
  update: (accountSid: string, bucketSid: string, body: SdkSettingsUpdate) =>
    api.put<BucketSdkSettings>(
      `${acct(accountSid)}/buckets/${encodeURIComponent(bucketSid)}/sdkSettings`,
      body,
    ),
};
