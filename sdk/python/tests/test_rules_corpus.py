"""The shared client-rules corpus (test/fixtures/sdk-rules-corpus.json): the Python SDK gives the
results the Node.js SDK gives (test/integration/sdk-python.test.ts checks the Node.js side)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tapline._criteria import compile_criteria, excluded_by_criteria
from tapline._rules import (
    compile_exclusion,
    compile_redaction,
    excluded_by,
    parse_field_path,
    redact_record,
    sample_rate_of,
)
from tapline._sensitive import compile_sensitive, redact_sensitive

CORPUS_PATH = Path(__file__).resolve().parents[3] / "test" / "fixtures" / "sdk-rules-corpus.json"
CORPUS: dict[str, Any] = json.loads(CORPUS_PATH.read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", CORPUS["redactions"], ids=lambda c: str(c["name"]))
def test_redaction(case: dict[str, Any]) -> None:
    compiled = [c for c in (compile_redaction(r) for r in case["rules"]) if c is not None]
    assert len(compiled) == case["compiled"]
    record = copy.deepcopy(case["record"])
    redact_record(record, compiled, case["environment"])
    assert record == case["expected"]


@pytest.mark.parametrize("case", CORPUS["fieldPaths"], ids=lambda c: str(c["path"]))
def test_field_path(case: dict[str, Any]) -> None:
    parsed = parse_field_path(case["path"])
    assert (None if parsed is None else [s.as_json() for s in parsed]) == case["expected"]


@pytest.mark.parametrize("group", CORPUS["exclusions"])
def test_exclusions(group: dict[str, Any]) -> None:
    compiled = [c for c in (compile_exclusion(r) for r in group["rules"]) if c is not None]
    assert len(compiled) == group["compiled"]
    for c in group["cases"]:
        hit = excluded_by(compiled, c["method"], c["path"], c["status"], c["environment"])
        assert (None if hit is None else hit.sid) == c["excludedBy"], c


@pytest.mark.parametrize("case", CORPUS["sampling"])
def test_sampling(case: dict[str, Any]) -> None:
    rate = sample_rate_of(
        case["sampling"], case["bucketRate"], case["method"], case["endpoint"], case["path"]
    )
    assert rate == pytest.approx(case["rate"])


@pytest.mark.parametrize("case", CORPUS["shapeA"], ids=lambda c: str(c["name"]))
def test_shape_a(case: dict[str, Any]) -> None:
    compiled = compile_sensitive(case["rules"])
    assert compiled.size == case["compiled"]
    assert sorted(s["sid"] for s in compiled.skipped) == case["skipped"]
    record = copy.deepcopy(case["record"])
    changed = redact_sensitive(record, compiled)
    # The Node.js engine marks a changed record `redacted: true`; the Python SDK reports it instead
    # (the ingest refuses the field on a captured record).
    expected = dict(case["expected"])
    assert changed == expected.pop("redacted", False)
    assert record == expected


@pytest.mark.parametrize("group", CORPUS["criteria"])
def test_exclusion_criteria(group: dict[str, Any]) -> None:
    compiled, skipped = compile_criteria(group["rules"])
    assert len(compiled) == group["compiled"]
    assert sorted(s["sid"] for s in skipped) == group["skipped"]
    for c in group["cases"]:
        hit = excluded_by_criteria(compiled, c["record"], c["environment"])
        assert (None if hit is None else hit.sid) == c["excludedBy"], c
