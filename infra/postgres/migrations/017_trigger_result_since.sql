-- Up Migration
-- Since when a threshold trigger's last result (holds / does not hold) is the same: the Alerts
-- page's "firing since" / "resolved since" (docs/workflows-api.md "Alerts"). Set by every
-- evaluation that changes last_result; NULL until the first evaluation after this migration.
ALTER TABLE workflow_trigger_state ADD COLUMN result_since timestamptz;

