-- Up Migration
-- A threshold workflow's alert is open from the fire until the condition clears: `firing` is set
-- by the fire's claim and cleared by an atomic claim when an evaluation finds the condition false,
-- which sends one `resolved` job to the native alert channels (docs/workflows.md).
ALTER TABLE workflow_trigger_state ADD COLUMN firing boolean NOT NULL DEFAULT false;
