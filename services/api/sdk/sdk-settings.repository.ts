import type pg from 'pg';
import { SDK_SETTING_DEFAULTS, type SdkSettingValues } from '../../../schemas/rules.schema.js';

export interface BucketSdkSettings {
  bucketSid: string;
  /** every setting: the stored ones over the defaults */
  settings: SdkSettingValues;
  defaults: SdkSettingValues;
  /** when a setting was last changed; null = never (all defaults) */
  updatedAt: string | null;
}

/** Only known keys of the right type survive: a row written by an older version cannot leak out. */
function merged(stored: Record<string, unknown> | undefined): SdkSettingValues {
  const out: SdkSettingValues = { ...SDK_SETTING_DEFAULTS };
  if (!stored) return out;
  for (const key of Object.keys(out) as (keyof SdkSettingValues)[]) {
    const v = stored[key];
    if (typeof v === typeof out[key]) (out as Record<string, unknown>)[key] = v;
  }
  return out;
}

/**
 * The SDK settings of buckets (migration 008): only changed values are stored, the defaults come
 * from SDK_SETTING_DEFAULTS. Callers check the bucket belongs to the account first.
 */
export class SdkSettingsRepository {
  constructor(private readonly pool: pg.Pool) {}

  async get(bucketSid: string): Promise<BucketSdkSettings> {
    const r = await this.pool.query<{ settings: Record<string, unknown>; updated_at: Date }>(
      'SELECT settings, updated_at FROM bucket_sdk_settings WHERE bucket_sid = $1',
      [bucketSid],
    );
    const row = r.rows[0];
    return {
      bucketSid,
      settings: merged(row?.settings),
      defaults: { ...SDK_SETTING_DEFAULTS },
      updatedAt: row ? row.updated_at.toISOString() : null,
    };
  }

  /** Merges `changes` (schema-checked keys) into the stored settings in one statement. */
  async update(
    accountSid: string,
    bucketSid: string,
    changes: Partial<SdkSettingValues>,
  ): Promise<BucketSdkSettings> {
    await this.pool.query(
      `INSERT INTO bucket_sdk_settings (bucket_sid, account_sid, settings) VALUES ($1, $2, $3::jsonb)
       ON CONFLICT (bucket_sid) DO UPDATE
         SET settings = bucket_sdk_settings.settings || EXCLUDED.settings, updated_at = now()`,
      [bucketSid, accountSid, JSON.stringify(changes)],
    );
    return this.get(bucketSid);
  }
}
