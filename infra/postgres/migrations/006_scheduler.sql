-- Up Migration
-- Scheduler state (docs/workflows.md "Scheduler"). Both tables are claimed with one atomic
-- INSERT ... ON CONFLICT DO UPDATE ... WHERE, so two replicas never fire the same thing twice even
-- when their clocks differ by more than a job's run time (the advisory lock alone would not stop
-- a replica whose tick comes after the other's run finished).

-- Per workflow (threshold and schedule triggers): when it last fired and, for threshold
-- triggers, the last evaluation. A threshold workflow fires again only when
-- evaluated_at >= last_fired_at + its window (the cooldown).
CREATE TABLE workflow_trigger_state (
  workflow_sid      text PRIMARY KEY REFERENCES workflows (sid) ON DELETE CASCADE,
  account_sid       text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  last_fired_at     timestamptz,
  last_evaluated_at timestamptz,
  last_value        double precision,
  last_result       boolean,
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX workflow_trigger_state_account ON workflow_trigger_state (account_sid);

-- Per static scheduler job (threshold evaluation, full reload): the last cron slot run, so a
-- slot runs once across replicas.
CREATE TABLE scheduler_runs (
  job_name    text PRIMARY KEY,
  last_slot   timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);
