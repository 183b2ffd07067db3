-- Up Migration
-- Service level objectives (docs/slos.md): an SLI over one bucket (optionally one environment,
-- endpoint template and method), an objective in percent and a rolling window of 7, 28 or 30 days.
-- The SLI figures are computed from the ClickHouse per-minute aggregates when asked; only the
-- definition is stored here.
CREATE TABLE slos (
  sid              text PRIMARY KEY,
  account_sid      text NOT NULL REFERENCES accounts (sid) ON DELETE CASCADE,
  bucket_sid       text NOT NULL REFERENCES buckets (sid) ON DELETE CASCADE,
  environment_sid  text,
  endpoint         text,
  method           text,
  name             text NOT NULL,
  sli_kind         text NOT NULL CHECK (sli_kind IN ('availability', 'latency')),
  threshold_ms     double precision,
  objective        double precision NOT NULL CHECK (objective > 0 AND objective < 100),
  window_days      integer NOT NULL CHECK (window_days IN (7, 28, 30)),
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz,
  CHECK ((sli_kind = 'latency') = (threshold_ms IS NOT NULL))
);
CREATE INDEX slos_account ON slos (account_sid, created_at);

-- The regression trigger (docs/releases.md "Alerts"): one row per (workflow, deployment event)
-- once the event's impact was decided for that workflow, so a deployment fires a workflow at most
-- once. The insert is the claim: of two scheduler replicas only the one that inserts evaluates.
CREATE TABLE release_regression_checks (
  workflow_sid  text NOT NULL REFERENCES workflows (sid) ON DELETE CASCADE,
  event_sid     text NOT NULL REFERENCES events (sid) ON DELETE CASCADE,
  regressed     boolean,
  checked_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workflow_sid, event_sid)
);
CREATE INDEX release_regression_checks_event ON release_regression_checks (event_sid);
