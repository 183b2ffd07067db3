-- Up Migration
-- Shape A exclusion and redaction rules (docs/rules.md "Shape A") live in the same
-- tables as Shape B, told apart by `shape`. Shape A rows leave the Shape B columns NULL and fill
-- their own; Shape B rows are unchanged. `deleted_at` is Shape A's soft delete: a row with it set
-- is no longer applied and is listed only on request. The rules NOTIFY triggers of 002 fire on
-- every row change as before, so processors reload an account's rules on create, update and
-- (soft) delete.

ALTER TABLE exclusions
  ADD COLUMN shape text NOT NULL DEFAULT 'B' CHECK (shape IN ('A', 'B')),
  ADD COLUMN criteria text,
  ADD COLUMN deleted_at timestamptz,
  ALTER COLUMN name DROP NOT NULL,
  ALTER COLUMN path_pattern DROP NOT NULL,
  ALTER COLUMN description DROP NOT NULL;

-- Each shape has its own required columns; a soft delete exists only for Shape A.
ALTER TABLE exclusions ADD CONSTRAINT exclusions_shape_columns CHECK (
  (shape = 'B' AND name IS NOT NULL AND path_pattern IS NOT NULL AND criteria IS NULL AND deleted_at IS NULL)
  OR (shape = 'A' AND criteria IS NOT NULL AND name IS NULL AND path_pattern IS NULL)
);

ALTER TABLE redactions
  ADD COLUMN shape text NOT NULL DEFAULT 'B' CHECK (shape IN ('A', 'B')),
  ADD COLUMN scopes text[],
  ADD COLUMN pattern text,
  ADD COLUMN type text,
  ADD COLUMN level text CHECK (level IN ('full', 'mask', 'partial')),
  ADD COLUMN apply_to text CHECK (apply_to IN ('key', 'value')),
  ADD COLUMN deleted_at timestamptz,
  ALTER COLUMN name DROP NOT NULL,
  ALTER COLUMN field_path DROP NOT NULL,
  ALTER COLUMN redaction_type DROP NOT NULL,
  ALTER COLUMN description DROP NOT NULL;

-- redaction_type's CHECK (002) already lets NULL through (a CHECK on NULL is not false).
ALTER TABLE redactions ADD CONSTRAINT redactions_shape_columns CHECK (
  (shape = 'B' AND name IS NOT NULL AND field_path IS NOT NULL AND redaction_type IS NOT NULL
     AND type IS NULL AND level IS NULL AND deleted_at IS NULL)
  OR (shape = 'A' AND type IS NOT NULL AND level IS NOT NULL AND scopes IS NOT NULL
     AND name IS NULL AND field_path IS NULL AND redaction_type IS NULL)
);
