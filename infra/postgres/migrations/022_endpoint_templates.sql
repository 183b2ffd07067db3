-- Up Migration
-- Endpoint template rules (docs/processing.md, "Endpoint templates"): per bucket, patterns such as
-- `/coupons/{code}` the processor stores matching paths under, tried in creation order before its
-- automatic templating (`/v1/accounts/{a}/buckets/{b}/endpointTemplates`). `pattern` is the text
-- the API validated; `shape` is the pattern with its placeholder names left out (`/coupons/{}`),
-- so two rules matching the same paths with the same method are refused as duplicates; `method`
-- is upper case, NULL for every method. The processor's rule snapshot reloads the account on
-- change (tapline_rules, 002_config.sql).
CREATE TABLE endpoint_templates (
  sid         text PRIMARY KEY,
  account_sid text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  bucket_sid  text NOT NULL REFERENCES buckets (sid) ON DELETE CASCADE,
  pattern     text NOT NULL,
  shape       text NOT NULL,
  method      text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz
);
CREATE UNIQUE INDEX endpoint_templates_shape ON endpoint_templates (bucket_sid, shape, COALESCE(method, ''));
CREATE INDEX endpoint_templates_account ON endpoint_templates (account_sid);

CREATE TRIGGER endpoint_templates_rules_notify AFTER INSERT OR UPDATE OR DELETE ON endpoint_templates
  FOR EACH ROW EXECUTE FUNCTION tapline_notify_rules();
