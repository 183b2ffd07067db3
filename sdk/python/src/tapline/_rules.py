"""Client-side rules from the bucket's SDK settings, applied in the host.

Exclusions and ``redactAt: client`` redactions (Shape B) behave as in the Node.js SDK and the
processor: the field path language is the server's (``$.a.b``, ``$['k']``, ``$.a[0]``,
``[*]``/``.*``, ``$..name``) with the record-part roots ``request.body``, ``response.body``,
``request.headers``, ``response.headers``, ``request.queryString``, or both bodies without one.
Query rules also reach the fragment's ``name=value`` pairs and a given ``endpoint``'s query; a
rule whose path ends in a named key also redacts the tags with that key; a rule whose last key
names a credential also redacts the userinfo password of the URL and the host. The shared test
corpus (test/fixtures/sdk-rules-corpus.json) holds both SDKs to the same results.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, unquote

JSON = Any
Record = dict[str, Any]
Container = dict[str, Any] | list[Any]


@dataclass(frozen=True)
class Segment:
    """One step of a field path: ``key``, ``index``, ``wildcard`` or ``recursive`` (``..name``)."""

    type: str
    name: str = ""
    index: int = 0

    def as_json(self) -> dict[str, Any]:
        if self.type == "key" or self.type == "recursive":
            return {"type": self.type, "name": self.name}
        if self.type == "index":
            return {"type": "index", "index": self.index}
        return {"type": "wildcard"}


_DOT_NAME = re.compile(r"[A-Za-z0-9_-]")


def parse_field_path(path: object) -> list[Segment] | None:
    """The segments of a field path, or None when it is not valid (the rule is then skipped)."""
    if not isinstance(path, str) or not path.startswith("$") or len(path) > 1024:
        return None
    out: list[Segment] = []
    i = 1
    n = len(path)

    def dot_name() -> str | None:
        nonlocal i
        start = i
        while i < n and _DOT_NAME.match(path[i]):
            i += 1
        return path[start:i] if i > start else None

    def quoted() -> str | None:
        nonlocal i
        q = path[i]
        i += 1
        name = ""
        while True:
            if i >= n:
                return None
            c = path[i]
            if c == "\\":
                nxt = path[i + 1] if i + 1 < n else None
                if nxt != q and nxt != "\\":
                    return None
                name += nxt
                i += 2
                continue
            i += 1
            if c == q:
                break
            name += c
        return name or None

    def bracket(recursive: bool) -> Segment | None:
        nonlocal i
        i += 1
        c = path[i] if i < n else None
        seg: Segment | None = None
        if c == "'" or c == '"':
            name = quoted()
            if name is None:
                return None
            seg = Segment("recursive" if recursive else "key", name)
        elif c == "*" and not recursive:
            i += 1
            seg = Segment("wildcard")
        elif c is not None and "0" <= c <= "9" and not recursive:
            start = i
            while i < n and "0" <= path[i] <= "9":
                i += 1
            seg = Segment("index", index=int(path[start:i]))
        if seg is None or i >= n or path[i] != "]":
            return None
        i += 1
        return seg

    while i < n:
        seg: Segment | None = None
        if path[i] == "." and i + 1 < n and path[i + 1] == ".":
            i += 2
            if i < n and path[i] == "[":
                seg = bracket(True)
            else:
                name = dot_name()
                seg = None if name is None else Segment("recursive", name)
        elif path[i] == ".":
            i += 1
            if i < n and path[i] == "*":
                i += 1
                seg = Segment("wildcard")
            else:
                name = dot_name()
                seg = None if name is None else Segment("key", name)
        elif path[i] == "[":
            seg = bracket(False)
        if seg is None:
            return None
        out.append(seg)
        if len(out) > 32:
            return None
    return out or None


_PARTS: dict[str, dict[str, str]] = {
    "request": {
        "body": "request.body",
        "headers": "request.headers",
        "queryString": "request.queryString",
    },
    "response": {"body": "response.body", "headers": "response.headers"},
}

_LETTER_OR_DIGIT = re.compile(r"[^\W_]")


def js_string(v: object) -> str:
    """``String(v)`` as JavaScript writes it (``true``, ``1`` for 1.0), for mask and tag values."""
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, float):
        if math.isfinite(v) and v == int(v) and abs(v) < 1e21:
            return str(int(v))
        return repr(v) if math.isfinite(v) else ("NaN" if v != v else ("Infinity" if v > 0 else "-Infinity"))
    return str(v)


def dumps(v: object) -> str:
    """JSON text as ``JSON.stringify`` writes it: compact, non-ASCII kept."""
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _mask(v: JSON) -> JSON:
    if v is None:
        return v
    if isinstance(v, str):
        return _LETTER_OR_DIGIT.sub("*", v)
    if isinstance(v, (bool, int, float)):
        return _LETTER_OR_DIGIT.sub("*", js_string(v))
    if isinstance(v, list):
        return [_mask(x) for x in v]
    if isinstance(v, dict):
        return {k: _mask(x) for k, x in v.items()}
    return v


def _string_of(v: JSON) -> str:
    return v if isinstance(v, str) else dumps(v)


def _hash(v: JSON) -> str:
    return hashlib.sha256(_string_of(v).encode("utf-8")).hexdigest()


def normalize_key(name: str) -> str:
    """Lower-cased, letters and digits only: ``X-Api-Key``, ``api_key``, ``apiKey`` all become ``apikey``."""
    return re.sub(r"[^a-z0-9]+", "", name.lower())


_SECRET_SUFFIXES = re.compile(
    "(?:password|passwd|passphrase|secret|secretkey|token|apikey|apisecret|privatekey|"
    "accesskey|credential|credentials|cookie|sessionid)$"
)
_SECRET_EXACT = frozenset({"pwd", "pass", "pin", "cvv", "cvc", "cvv2", "otp"})
_AUTH_HEADERS = frozenset({"authorization", "proxyauthorization"})


def is_secret_key(name: str) -> bool:
    """A key naming a secret (``client_secret``, ``X-Auth-Token``), as the server's detector reads it."""
    if len(name) > 128:
        return False
    k = normalize_key(name)
    return k in _SECRET_EXACT or _SECRET_SUFFIXES.search(k) is not None


def is_authorization_key(name: str) -> bool:
    return len(name) <= 32 and normalize_key(name) in _AUTH_HEADERS


@dataclass
class CompiledRedaction:
    sid: str
    roots: list[str]
    segments: list[Segment]
    action: Callable[[JSON], JSON]
    remove: bool
    environments: frozenset[str] | None
    tag_key: str | None
    credential: bool


def compile_redaction(rule: object) -> CompiledRedaction | None:
    """A redaction rule ready to apply, or None when its path or action is not understood."""
    if not isinstance(rule, dict) or not isinstance(rule.get("field"), str):
        return None
    raw = parse_field_path(rule["field"])
    if raw is None:
        return None
    roots = ["request.body", "response.body"]
    segments = raw
    first = raw[0].name if raw[0].type == "key" else None
    parts = _PARTS.get(first) if first is not None else None
    if parts is not None:
        second = raw[1].name if len(raw) > 1 and raw[1].type == "key" else None
        root = parts.get(second) if second is not None else None
        if root is None or len(raw) < 3:
            return None
        roots = [root]
        segments = raw[2:]
        if root not in ("request.body", "response.body"):
            only = segments[0]
            if len(segments) != 1 or only.type not in ("key", "wildcard"):
                return None
            if only.type == "key" and root != "request.queryString":
                segments = [Segment("key", only.name.lower())]
    action_name = rule.get("action")
    action: Callable[[JSON], JSON]
    if action_name == "mask":
        action = _mask
    elif action_name == "hash":
        action = _hash
    elif action_name == "replace":
        replacement = rule.get("replacement")
        value = replacement if isinstance(replacement, str) else "[REDACTED]"
        action = lambda _v: value  # noqa: E731
    elif action_name == "remove":
        action = lambda _v: None  # noqa: E731
    else:
        return None
    last = segments[-1]
    tag_key = last.name.lower() if last.type in ("key", "recursive") else None
    envs = rule.get("environments")
    sid = rule.get("sid")
    return CompiledRedaction(
        sid=sid if isinstance(sid, str) else rule["field"],
        roots=roots,
        segments=segments,
        action=action,
        remove=action_name == "remove",
        environments=frozenset(str(e) for e in envs) if isinstance(envs, list) else None,
        tag_key=tag_key,
        credential=tag_key is not None and (is_secret_key(tag_key) or is_authorization_key(tag_key)),
    )


def redacts_in(environments: frozenset[str] | None, env: str | None) -> bool:
    """A record without an environment may be any environment's: every redaction applies to it."""
    return not env or environments is None or env in environments


def _collect(value: JSON, segments: list[Segment], at: int, out: list[tuple[Container, Any]]) -> None:
    if at >= len(segments):
        return
    seg = segments[at]
    last = at == len(segments) - 1

    def visit(c: Container, k: Any) -> None:
        if last:
            out.append((c, k))
        else:
            _collect(c[k], segments, at + 1, out)

    if seg.type == "key":
        if isinstance(value, dict) and seg.name in value:
            visit(value, seg.name)
    elif seg.type == "index":
        if isinstance(value, list) and seg.index < len(value):
            visit(value, seg.index)
    elif seg.type == "wildcard":
        if isinstance(value, list):
            for i in range(len(value)):
                visit(value, i)
        elif isinstance(value, dict):
            for k in list(value.keys()):
                visit(value, k)
    else:

        def walk(v: JSON, depth: int) -> None:
            if depth > 64:
                return
            if isinstance(v, list):
                for x in v:
                    walk(x, depth + 1)
            elif isinstance(v, dict):
                for k, x in list(v.items()):
                    if k == seg.name:
                        visit(v, k)
                    else:
                        walk(x, depth + 1)

        walk(value, 0)


def _apply_to_value(value: JSON, rule: CompiledRedaction) -> bool:
    hits: list[tuple[Container, Any]] = []
    _collect(value, rule.segments, 0, hits)
    for c, k in hits:
        if rule.remove:
            if isinstance(c, list):
                c[k] = None
            else:
                c.pop(k, None)
        else:
            c[k] = rule.action(c[k])
    return len(hits) > 0


def _redact_body(body: JSON, rules: list[CompiledRedaction]) -> JSON:
    if body is None or not rules:
        return body
    if isinstance(body, str):
        t = body.lstrip()
        if not t or t[0] not in "{[":
            return body
        try:
            parsed = json.loads(body)
        except ValueError:
            return body
        changed = False
        for r in rules:
            changed = _apply_to_value(parsed, r) or changed
        return dumps(parsed) if changed else body
    if isinstance(body, (dict, list)):
        for r in rules:
            _apply_to_value(body, r)
    return body


def form_encode(s: str) -> str:
    """``application/x-www-form-urlencoded`` as URLSearchParams writes it (``*`` kept, ``~`` escaped)."""
    return quote_plus(s, safe="*").replace("~", "%7E")


def form_pairs(text: str) -> list[tuple[str, str]]:
    """``a=1&b=2`` as URLSearchParams reads it (``+`` is a space, a name without ``=`` has ``''``)."""
    return parse_qsl(text, keep_blank_values=True)


def _redact_pairs_text(text: str, rules: list[CompiledRedaction]) -> str | None:
    m: dict[str, JSON] = {}
    for k, v in form_pairs(text):
        prev = m.get(k)
        m[k] = v if prev is None else ([*prev, v] if isinstance(prev, list) else [prev, v])
    changed = False
    for r in rules:
        changed = _apply_to_value(m, r) or changed
    if not changed:
        return None
    out: list[str] = []
    for k, v in m.items():
        for x in v if isinstance(v, list) else [v]:
            out.append(form_encode(k) + "=" + form_encode(_string_of(x)))
    return "&".join(out)


def _redact_url_pairs(url: str, rules: list[CompiledRedaction], query: bool) -> str:
    h = url.find("#")
    q = url.find("?")
    if h >= 0 and q > h:
        q = -1
    out = url
    if h >= 0:
        frag = url[h + 1 :]
        eq = frag.find("=")
        qm = frag.find("?")
        cut = qm + 1 if 0 <= qm < eq else 0
        pairs = None if eq < 0 else _redact_pairs_text(frag[cut:], rules)
        if pairs is not None:
            out = url[:h] if cut == 0 and pairs == "" else url[: h + 1] + frag[:cut] + pairs
    if not query or q < 0:
        return out
    rebuilt = _redact_pairs_text(url[q + 1 : (None if h < 0 else h)], rules)
    if rebuilt is None:
        return out
    return out[:q] + (f"?{rebuilt}" if rebuilt else "") + ("" if h < 0 else out[h:])


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]{0,31}://")


def userinfo_password_span(text: str, host: bool) -> tuple[int, int] | None:
    """Where the password of a URL's userinfo (``scheme://user:PASSWORD@host``) is in ``text``.

    ``host`` is True when ``text`` is a host value (``user:password@host``, no scheme). None when
    there is no userinfo with a non-empty password.
    """
    if "@" not in text:
        return None
    start = 0
    if not host:
        m = _SCHEME.match(text)
        if m is None:
            return None
        start = m.end()
    end = start
    while end < len(text) and text[end] not in "/?#":
        end += 1
    if end == start:
        return None
    at = text.rfind("@", 0, end)
    if at < start:
        return None
    colon = text.find(":", start)
    if colon < 0 or colon + 1 >= at:
        return None
    return colon + 1, at


def replace_userinfo_password(text: str, host: bool, apply: Callable[[str], str | None]) -> str:
    """``text`` with its userinfo password replaced by ``apply(password)``; None removes it and its ``:``."""
    span = userinfo_password_span(text, host)
    if span is None:
        return text
    raw = text[span[0] : span[1]]
    password = unquote(raw, errors="strict") if _valid_percent(raw) else raw
    replaced = apply(password)
    if replaced is None:
        return text[: span[0] - 1] + text[span[1] :]
    return text[: span[0]] + quote(replaced, safe="-_.!~*'()") + text[span[1] :]


def _valid_percent(s: str) -> bool:
    try:
        unquote(s, errors="strict")
    except UnicodeDecodeError:
        return False
    return re.search(r"%(?![0-9A-Fa-f]{2})", s) is None


def _redact_userinfo(text: str, rules: list[CompiledRedaction], host: bool) -> str:
    def apply(password: str) -> str | None:
        value: JSON = password
        for r in rules:
            if r.remove:
                return None
            value = r.action(value)
        return _string_of(value)

    return replace_userinfo_password(text, host, apply)


def _redact_tags(tags: list[Any], rules: list[CompiledRedaction]) -> list[Any]:
    out: list[Any] = []
    for t in tags:
        raw_key = t.get("key") if isinstance(t, dict) else None
        key = raw_key.lower() if isinstance(raw_key, str) else None
        value = t.get("value") if isinstance(t, dict) else None
        removed = False
        for r in rules:
            if key is None or r.tag_key != key:
                continue
            if r.remove:
                removed = True
                break
            value = _string_of(r.action(value))
        if not removed:
            out.append(t if not isinstance(t, dict) or value == t.get("value") else {**t, "value": value})
    return out


def redact_record(record: Record, rules: list[CompiledRedaction], env: str) -> None:
    """Applies the client redaction rules to a record in place."""
    if not rules:
        return
    active = [r for r in rules if redacts_in(r.environments, env)]
    if not active:
        return

    def of(root: str) -> list[CompiledRedaction]:
        return [r for r in active if root in r.roots]

    request: Record = record["request"]
    response: Record | None = record.get("response")
    req_body = of("request.body")
    if req_body and "body" in request:
        request["body"] = _redact_body(request["body"], req_body)
    res_body = of("response.body")
    if res_body and response and "body" in response:
        response["body"] = _redact_body(response["body"], res_body)
    for r in of("request.headers"):
        _apply_to_value(request.get("headers"), r)
    if response:
        for r in of("response.headers"):
            _apply_to_value(response.get("headers"), r)
    qs = of("request.queryString")
    if qs:
        if isinstance(request.get("url"), str):
            request["url"] = _redact_url_pairs(request["url"], qs, False)
        if isinstance(record.get("endpoint"), str):
            record["endpoint"] = _redact_url_pairs(record["endpoint"], qs, True)
        changed = False
        for r in qs:
            changed = _apply_to_value(request.get("queryString"), r) or changed
        if changed:
            # The raw URL carries the same parameters: rebuilt from the redacted ones.
            parts: list[str] = []
            for k, v in (request.get("queryString") or {}).items():
                for x in v if isinstance(v, list) else [v]:
                    parts.append(form_encode(k) + "=" + form_encode(js_string(x)))
            q = "&".join(parts)
            base = str(request["url"]).split("?")[0]
            request["url"] = f"{base}?{q}" if q else base
            request["path"] = str(request["path"]).split("?")[0]
    tags = record.get("tags")
    if isinstance(tags, list) and tags and any(r.tag_key is not None for r in active):
        record["tags"] = _redact_tags(tags, active)
    credentials = [r for r in active if r.credential]
    if credentials:
        if isinstance(request.get("url"), str):
            request["url"] = _redact_userinfo(request["url"], credentials, False)
        if isinstance(request.get("host"), str):
            request["host"] = _redact_userinfo(request["host"], credentials, True)


@dataclass
class CompiledExclusion:
    sid: str
    path: Callable[[str], bool]
    method: str | None
    status_code: int | None
    environments: frozenset[str] | None


def compile_path_pattern(pattern: str) -> Callable[[str], bool]:
    """``*`` matches any run of characters; everything else matches itself."""
    if "*" not in pattern:
        return lambda p: p == pattern
    pieces = pattern.split("*")
    head, tail = pieces[0], pieces[-1]
    middle = [x for x in pieces[1:-1] if x]

    def match(p: str) -> bool:
        if len(p) < len(head) + len(tail) or not p.startswith(head) or not p.endswith(tail):
            return False
        frm = len(head)
        end = len(p) - len(tail)
        for piece in middle:
            at = p.find(piece, frm)
            if at < 0 or at + len(piece) > end:
                return False
            frm = at + len(piece)
        return True

    return match


def compile_exclusion(rule: object) -> CompiledExclusion | None:
    if not isinstance(rule, dict) or not isinstance(rule.get("path"), str) or not rule["path"]:
        return None
    method = rule.get("method")
    status = rule.get("statusCode")
    envs = rule.get("environments")
    sid = rule.get("sid")
    return CompiledExclusion(
        sid=sid if isinstance(sid, str) else rule["path"],
        path=compile_path_pattern(rule["path"]),
        method=method.upper() if isinstance(method, str) and method != "*" else None,
        status_code=status if isinstance(status, int) and not isinstance(status, bool) else None,
        environments=frozenset(str(e) for e in envs) if isinstance(envs, list) else None,
    )


def excluded_by(
    rules: Iterable[CompiledExclusion], method: str, path: str, status: int | None, env: str
) -> CompiledExclusion | None:
    """The first exclusion rule matching the call, or None. ``status`` None = not known yet."""
    q = path.find("?")
    p = path if q < 0 else path[:q]
    m = method.upper()
    for x in rules:
        if x.environments is not None and env not in x.environments:
            continue
        if x.method is not None and x.method != m:
            continue
        if x.status_code is not None and x.status_code != status:
            continue
        if x.path(p):
            return x
    return None


def _finite(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def sample_rate_of(
    sampling: dict[str, float] | None,
    bucket_rate: float,
    method: str,
    endpoint: str | None,
    path: str,
) -> float:
    """The sampling rate of a call.

    The host's per-endpoint rate (``METHOD template``, then ``template``, then the raw path)
    times the bucket's ``sampleRate``.
    """
    rate: float = 1
    if sampling:
        key = endpoint if endpoint is not None else path
        r: object = None
        for k in (f"{method.upper()} {key}", key, path):
            if k in sampling and sampling[k] is not None:
                r = sampling[k]
                break
        if _finite(r):
            rate = float(r)  # type: ignore[arg-type]
    b = float(bucket_rate) if _finite(bucket_rate) else 1.0
    return max(0.0, min(1.0, rate)) * max(0.0, min(1.0, b))
