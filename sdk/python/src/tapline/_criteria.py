"""Shape A exclusions (``exclusionCriteria`` of the ``/sdk`` answer) evaluated in the host.

The stream-view search language (docs/search.md) as the server's processor evaluates it on a
record, which the Node.js SDK runs: AND-ed terms, ``-`` negates, ``field:value`` or a bare word (a
case-insensitive substring of the path). Fields: ``method`` (alternatives ``GET,POST``),
``status`` (``404``, ``5xx``, ``>=500``, ``400..499``), ``duration`` (ms, ``s``), ``path`` and
``endpoint`` (``*`` wildcards), ``host`` (case-insensitive), ``env``, ``context``, ``direction``,
``blocked`` and ``tag`` (``tag:key`` or ``tag:key=value``). A criteria text that does not parse
raises ``CriteriaError`` with the position; the caller skips that rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

MAX_CRITERIA_LENGTH = 4096
MAX_TERMS = 50
MAX_ALTERNATIVES = 20
FIELDS = (
    "method",
    "status",
    "path",
    "endpoint",
    "duration",
    "env",
    "host",
    "direction",
    "context",
    "tag",
    "blocked",
)

Cond = Callable[["_View"], bool]


class CriteriaError(ValueError):
    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.position = position


def _show(s: str) -> str:
    import json

    return json.dumps(s[:40] + "…" if len(s) > 40 else s, ensure_ascii=False)


@dataclass
class _Term:
    negated: bool
    field: str | None
    value: str
    quoted: bool
    position: int


def _tokenize(text: str) -> list[_Term]:
    terms: list[_Term] = []
    n = len(text)
    i = 0

    def read_quoted() -> str:
        nonlocal i
        start = i
        i += 1
        out: list[str] = []
        while i < n:
            c = text[i]
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if c == '"':
                i += 1
                if i < n and not text[i].isspace():
                    raise CriteriaError(f"Unexpected character after the quoted value at position {i}", i)
                return "".join(out)
            out.append(c)
            i += 1
        raise CriteriaError(f"Unterminated quote starting at position {start}", start)

    def read_bare() -> str:
        nonlocal i
        start = i
        while i < n and not text[i].isspace():
            i += 1
        return text[start:i]

    while i < n:
        if text[i].isspace():
            i += 1
            continue
        position = i
        negated = False
        if text[i] == "-":
            negated = True
            i += 1
            if i >= n or text[i].isspace():
                raise CriteriaError(f'A "-" at position {position} must be followed by a term', position)
        if text[i] == '"':
            terms.append(_Term(negated, None, read_quoted(), True, position))
        else:
            m = re.match(r"([A-Za-z]+):", text[i : i + 40])
            if m:
                i += m.end()
                field = m.group(1)
                if i < n and text[i] == '"':
                    terms.append(_Term(negated, field, read_quoted(), True, position))
                else:
                    terms.append(_Term(negated, field, read_bare(), False, position))
            else:
                word = read_bare()
                colon = re.match(r"([\w.-]{1,40}):", word, re.ASCII)
                if colon:
                    raise CriteriaError(f"Unknown search field {_show(colon.group(1))}", position)
                terms.append(_Term(negated, None, word, False, position))
        if len(terms) > MAX_TERMS:
            raise CriteriaError(f"Search criteria have more than {MAX_TERMS} terms", position)
    return terms


def glob_matches(text: str, glob: str, case_insensitive: bool = False) -> bool:
    """A ``*`` glob over the whole string (``*`` = any run of characters), without a regex."""
    t = text.lower() if case_insensitive else text
    p = glob.lower() if case_insensitive else glob
    ti = pi = 0
    star = -1
    mark = 0
    while ti < len(t):
        if pi < len(p) and p[pi] != "*" and p[pi] == t[ti]:
            ti += 1
            pi += 1
        elif pi < len(p) and p[pi] == "*":
            star = pi
            pi += 1
            mark = ti
        elif star >= 0:
            pi = star + 1
            mark += 1
            ti = mark
        else:
            return False
    while pi < len(p) and p[pi] == "*":
        pi += 1
    return pi == len(p)


def _text_matcher(value: str) -> Callable[[str], bool]:
    if "*" in value:
        return lambda v: glob_matches(v, value)
    return lambda v: v == value


NumberTest = Callable[[float], bool]


def _number_cond(raw: str, parse: Callable[[str], float], at: int) -> NumberTest:
    rng = re.match(r"^(.+?)\.\.(.+)$", raw, re.S)
    if rng:
        lo, hi = parse(rng.group(1)), parse(rng.group(2))
        if lo > hi:
            raise CriteriaError(f"Range {_show(raw)} has its bounds reversed", at)
        return lambda v: lo <= v <= hi
    m = re.match(r"^(>=|<=|!=|>|<|=)?(.+)$", raw, re.S)
    assert m is not None
    op, value = m.group(1) or "=", parse(m.group(2))
    ops: dict[str, NumberTest] = {
        "=": lambda v: v == value,
        "!=": lambda v: v != value,
        ">": lambda v: v > value,
        ">=": lambda v: v >= value,
        "<": lambda v: v < value,
        "<=": lambda v: v <= value,
    }
    return ops[op]


def _alternatives(t: _Term) -> list[str]:
    if t.quoted:
        return [t.value]
    parts = t.value.split(",")
    if len(parts) > MAX_ALTERNATIVES:
        raise CriteriaError(f"Too many alternatives for {t.field or 'a word'}", t.position)
    if "" in parts:
        raise CriteriaError(f"Empty alternative in {_show(t.value)}", t.position)
    return parts


def _ascii_lower(s: str) -> str:
    return re.sub(r"[A-Z]+", lambda m: m.group(0).lower(), s)


def _str(v: object) -> str:
    return v if isinstance(v, str) else ""


_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_NUMERIC = re.compile(r"^[0-9]+$")
_HEX = re.compile(r"^[0-9a-f]{16,}$", re.I)
_SHORT_HEX = re.compile(r"^(?=[a-f]*[0-9])(?=[0-9]*[a-f])[0-9a-f]{7,15}$", re.I)
_OPAQUE = re.compile(r"^(?=.*[0-9])[A-Za-z0-9_-]{20,}$")
_PREFIXED_SID = re.compile(r"^[a-z]{2,6}_(?:[A-Za-z0-9]{16,}|(?=[A-Za-z]*[0-9])[A-Za-z0-9]{8,})$")


def endpoint_template(path: str) -> str:
    """The processor's template of a path (``/users/123`` → ``/users/{id}``)."""
    q = path.find("?")
    clean = path[:q] if q >= 0 else path
    if len(clean) > 2048:
        return clean[:2048]
    ids = (_NUMERIC, _UUID, _HEX, _SHORT_HEX, _PREFIXED_SID, _OPAQUE)
    return "/".join("{id}" if seg and any(r.match(seg) for r in ids) else seg for seg in clean.split("/"))


class _View:
    """The record's values as the server's row holds them, computed on first use."""

    def __init__(self, r: Mapping[str, Any]) -> None:
        self.r = r
        req = r.get("request")
        self.req: Mapping[str, Any] = req if isinstance(req, Mapping) else {}
        self._tags: dict[str, str] | None = None
        self._endpoint: str | None = None

    @property
    def path(self) -> str:
        return _str(self.req.get("path"))

    @property
    def endpoint(self) -> str:
        if self._endpoint is None:
            e = self.r.get("endpoint")
            self._endpoint = e if isinstance(e, str) else endpoint_template(self.path) if self.path else ""
        return self._endpoint

    @property
    def tags(self) -> dict[str, str]:
        if self._tags is None:
            self._tags = {}
            tags = self.r.get("tags")
            if isinstance(tags, list):
                for t in tags:
                    if isinstance(t, Mapping) and isinstance(t.get("key"), str):
                        self._tags[t["key"]] = _str(t.get("value"))
        return self._tags


def _parse_status(at: int) -> Callable[[str], float]:
    def parse(s: str) -> float:
        if not re.match(r"^[0-9]{1,3}$", s):
            raise CriteriaError(f"Invalid status code {_show(s)}", at)
        return int(s)

    return parse


def _parse_duration(at: int) -> Callable[[str], float]:
    def parse(s: str) -> float:
        m = re.match(r"^([0-9]{1,9}(?:\.[0-9]{1,6})?)(ms|s)?$", s, re.I)
        if not m:
            raise CriteriaError(f"Invalid duration {_show(s)} (milliseconds, or a number with ms or s)", at)
        v = float(m.group(1))
        return v * 1000 if (m.group(2) or "").lower() == "s" else v

    return parse


def _status_alt(v: str, at: int) -> NumberTest:
    cls = re.match(r"^([1-5])([0-9]|x)x$", v, re.I)
    if cls:
        digit = cls.group(2).isdigit()
        lo = int(cls.group(1)) * 100 + (int(cls.group(2)) * 10 if digit else 0)
        hi = lo + (9 if digit else 99)
        return lambda s: lo <= s <= hi
    return _number_cond(v, _parse_status(at), at)


def _condition(t: _Term) -> Cond:
    at = t.position
    if t.field is None:
        if t.value == "":
            raise CriteriaError("Empty quoted word", at)
        word = t.value.lower()
        return lambda v: word in v.path.lower()
    field = t.field.lower()
    if field not in FIELDS:
        raise CriteriaError(f"Unknown search field {_show(t.field)}; known fields: {', '.join(FIELDS)}", at)
    if t.value == "":
        raise CriteriaError(f"The field {field} needs a value", at)
    if field == "method":
        methods: list[str] = []
        for m in _alternatives(t):
            if not re.match(r"^[A-Za-z-]{1,32}$", m):
                raise CriteriaError(f"Invalid method {_show(m)}", at)
            methods.append(m.upper())
        return lambda v: _str(v.req.get("method")).upper() in methods
    if field == "status":
        alts = [_status_alt(a, at) for a in _alternatives(t)]

        def status(v: _View) -> bool:
            res = v.r.get("response")
            sc = res.get("statusCode") if isinstance(res, Mapping) else None
            s = sc if isinstance(sc, (int, float)) and not isinstance(sc, bool) else 0
            return any(a(s) for a in alts)

        return status
    if field == "duration":
        cond = _number_cond(t.value, _parse_duration(at), at)

        def duration(v: _View) -> bool:
            tm = v.r.get("timings")
            d = tm.get("duration") if isinstance(tm, Mapping) else None
            ok = isinstance(d, (int, float)) and not isinstance(d, bool) and d == d and abs(d) != float("inf")
            return ok and cond(float(d))  # type: ignore[arg-type]

        return duration
    if field in ("path", "endpoint"):
        tm = _text_matcher(t.value)
        return (lambda v: tm(v.path)) if field == "path" else (lambda v: tm(v.endpoint))
    if field == "host":
        hosts = [(a, True) if "*" in a else (a.lower(), False) for a in _alternatives(t)]

        def host(v: _View) -> bool:
            h = _str(v.req.get("host"))
            return any(glob_matches(h, a, True) if w else _ascii_lower(h) == a for a, w in hosts)

        return host
    if field in ("env", "context"):
        values = _alternatives(t)
        key = "environmentSid" if field == "env" else "contextSid"
        return lambda v: _str(v.r.get(key)) in values
    if field == "direction":
        d = t.value.lower()
        if d not in ("in", "out"):
            raise CriteriaError(f"direction must be in or out, not {_show(t.value)}", at)
        return lambda v: (v.r.get("direction") if isinstance(v.r.get("direction"), str) else "in") == d
    if field == "blocked":
        b = t.value.lower()
        if b not in ("true", "false"):
            raise CriteriaError(f"blocked must be true or false, not {_show(t.value)}", at)
        want = b == "true"

        def blocked(v: _View) -> bool:
            fw = v.r.get("firewall")
            return bool(fw.get("blocked") if isinstance(fw, Mapping) else False) == want

        return blocked
    # tag
    eq = t.value.find("=")
    key = t.value if eq < 0 else t.value[:eq]
    if key == "":
        raise CriteriaError("tag needs a key: tag:key or tag:key=value", at)
    if eq < 0:
        return lambda v: key in v.tags
    vm = _text_matcher(t.value[eq + 1 :])
    return lambda v: key in v.tags and vm(v.tags[key])


def parse_criteria(text: str) -> list[tuple[bool, Cond]]:
    """AND-ed ``(negated, condition)`` terms; raises ``CriteriaError`` with the position."""
    if len(text) > MAX_CRITERIA_LENGTH:
        raise CriteriaError(
            f"Search criteria are longer than {MAX_CRITERIA_LENGTH} characters", MAX_CRITERIA_LENGTH
        )
    return [(t.negated, _condition(t)) for t in _tokenize(text)]


@dataclass
class CompiledCriteria:
    sid: str
    environments: frozenset[str] | None
    terms: list[tuple[bool, Cond]]

    def matches(self, record: Mapping[str, Any]) -> bool:
        view = _View(record)
        return all(cond(view) != negated for negated, cond in self.terms)


def compile_criteria(rules: list[Any]) -> tuple[list[CompiledCriteria], list[dict[str, str]]]:
    """The criteria exclusions that parse, and the ``{sid, error}`` of those that do not."""
    out: list[CompiledCriteria] = []
    skipped: list[dict[str, str]] = []
    for i, x in enumerate(rules):
        raw_sid = x.get("sid") if isinstance(x, Mapping) else None
        sid = raw_sid if isinstance(raw_sid, str) and raw_sid else f"#{i}"
        try:
            if not isinstance(x, Mapping) or not isinstance(x.get("criteria"), str):
                raise CriteriaError("criteria must be a string", 0)
            terms = parse_criteria(x["criteria"])
        except CriteriaError as err:
            skipped.append({"sid": sid, "error": f"at position {err.position}: {err}"})
            continue
        envs = x.get("environments")
        out.append(CompiledCriteria(sid, frozenset(envs) if isinstance(envs, list) and envs else None, terms))
    return out, skipped


def excluded_by_criteria(
    rules: list[CompiledCriteria], record: Mapping[str, Any], env: str
) -> CompiledCriteria | None:
    """The first rule (of the record's environment) matching the record, or None."""
    for x in rules:
        if x.environments is not None and env not in x.environments:
            continue
        if x.matches(record):
            return x
    return None
