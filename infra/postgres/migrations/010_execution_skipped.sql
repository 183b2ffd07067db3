-- Up Migration
-- A workflow execution over the per-minute limits (ACTION_RATE_LIMIT_WORKFLOW / _ACCOUNT,
-- docs/security.md "Limits") is logged as `skipped` with the reason in `error`: none of its
-- actions runs, and it is not silently dropped.

ALTER TABLE workflow_executions DROP CONSTRAINT IF EXISTS workflow_executions_status_check;
ALTER TABLE workflow_executions ADD CONSTRAINT workflow_executions_status_check
  CHECK (status IN ('pending', 'running', 'succeeded', 'failed', 'skipped'));
