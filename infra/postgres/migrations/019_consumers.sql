-- Up Migration
-- API consumers (docs/consumers.md).
--
-- consumer_identification: per bucket, the ordered list of sources the processor reads a consumer
-- id from when a record carries none (`GET/PUT /v1/accounts/{a}/buckets/{b}/consumerIdentification`).
-- `sources` is the JSON array the API validated (schemas/consumers.schema.ts). The processor's rule
-- snapshot reloads the account on change (tapline_rules, 002_config.sql).
CREATE TABLE consumer_identification (
  account_sid text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  bucket_sid  text PRIMARY KEY REFERENCES buckets (sid) ON DELETE CASCADE,
  sources     jsonb NOT NULL DEFAULT '[]',
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX consumer_identification_account ON consumer_identification (account_sid);

CREATE TRIGGER consumer_identification_rules_notify AFTER INSERT OR UPDATE OR DELETE ON consumer_identification
  FOR EACH ROW EXECUTE FUNCTION tapline_notify_rules();

-- consumers: a name and group set through `PUT /v1/accounts/{a}/consumers/{id}`, each with the
-- instant it was set. Records carry names and groups too (ClickHouse consumer_labels); the API
-- answers whichever of the two was written last. NULL: never set here.
CREATE TABLE consumers (
  account_sid   text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  consumer_id   text NOT NULL,
  name          text,
  name_set_at   timestamptz,
  group_name    text,
  group_set_at  timestamptz,
  PRIMARY KEY (account_sid, consumer_id)
);
CREATE INDEX consumers_group ON consumers (account_sid, group_name) WHERE group_name IS NOT NULL;

-- Per-consumer threshold triggers (`trigger.perConsumer`, docs/consumers.md): whether a workflow's
-- alert is open for a consumer. A breach fires once (the claim sets `firing` when it was not set);
-- the consumer's condition clearing resets it, so the next breach fires again.
CREATE TABLE consumer_threshold_state (
  workflow_sid  text NOT NULL REFERENCES workflows (sid) ON DELETE CASCADE,
  consumer_id   text NOT NULL,
  firing        boolean NOT NULL DEFAULT false,
  fired_at      timestamptz,
  PRIMARY KEY (workflow_sid, consumer_id)
);
