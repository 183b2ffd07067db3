"""Shape A sensitive-data rules (``sensitiveRules`` of the ``/sdk`` answer) applied in the host.

The same detectors, masks and formats as the server's engine, which the Node.js SDK runs: every
predefined type (a value detector finds its shape in any text, then a validator rejects
look-alikes; a key detector recognises a field NAME and redacts its whole value), custom types
(``applyTo`` ``key`` or ``value``), the levels ``full``, ``mask`` and ``partial``, and the scopes
``request.headers``, ``request.query``, ``request.body``, ``request.url``, ``response.headers``,
``response.body`` and ``*`` (also the record's ``tags``). Bodies are redacted in their format (JSON
text rewritten token by token, form, XML, plain text) so every other byte stays as received. The
shared corpus (test/fixtures/sdk-rules-corpus.json, ``shapeA``) holds the Node.js SDK's results.

The predefined patterns are linear by construction (bounded quantifiers, a lookbehind on the leading
class), so Python's ``re`` runs them in bounded time. Custom patterns run in ``re`` too; a pattern
RE2 refuses (backreferences, lookarounds) is refused here as well, and the rule is skipped.
Nothing here raises for a bad rule: it is reported in ``skipped``.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

from ._rules import is_authorization_key, is_secret_key, userinfo_password_span

Hit = Callable[[str, str], None]

SCOPES = (
    "request.headers",
    "request.query",
    "request.body",
    "request.url",
    "response.headers",
    "response.body",
)
LEVELS = ("full", "mask", "partial")
RECORD_FIELDS = ("endpoint", "traces", "tags", "note", "contextSid")
MAX_PATTERN_LENGTH = 1024
MAX_DEPTH = 256


# ---------------------------------------------------------------------------------------------
# Masks


def _alnum(ch: str) -> bool:
    return ch.isalnum()


def mask_text(s: str) -> str:
    """Letters and digits become ``*``; separators and punctuation stay."""
    return "".join("*" if _alnum(c) else c for c in s)


def _is_digit(c: str) -> bool:
    return "0" <= c <= "9"


def _mask_all_but_last(s: str, keep: int, what: Callable[[str], bool] = _alnum) -> str:
    chars = list(s)
    seen = 0
    for i in range(len(chars) - 1, -1, -1):
        if not what(chars[i]):
            continue
        if seen >= keep:
            chars[i] = "*"
        seen += 1
    return "".join(chars)


def _keep_prefix(s: str, n: int) -> str:
    return s[:n] + mask_text(s[n:])


# ---------------------------------------------------------------------------------------------
# Validators


def _digits(s: str) -> str:
    return re.sub(r"[^0-9]+", "", s)


def _luhn(d: str) -> bool:
    total = 0
    double = False
    for ch in reversed(d):
        n = ord(ch) - 48
        if n < 0 or n > 9:
            return False
        if double:
            n *= 2
            if n > 9:
                n -= 9
        total += n
        double = not double
    return total % 10 == 0


def _num(s: str) -> float:
    return int(s) if s.isdigit() else float("nan")


def _card_network(d: str) -> bool:
    n = len(d)
    p2, p3, p4, p6 = _num(d[:2]), _num(d[:3]), _num(d[:4]), _num(d[:6])
    return (
        (d[0] == "4" and n in (13, 16, 19))
        or (((51 <= p2 <= 55) or (2221 <= p4 <= 2720)) and n == 16)
        or (p2 in (34, 37) and n == 15)
        or ((p4 == 6011 or 644 <= p3 <= 649 or p2 == 65 or 622126 <= p6 <= 622925) and n >= 16)
        or (((300 <= p3 <= 305) or p2 in (36, 38, 39)) and n >= 14)
        or (3528 <= p4 <= 3589 and n >= 16)
        or (p2 == 62 and n >= 16)
        or ((p2 == 50 or 56 <= p2 <= 69) and n >= 12)
    )


def _card_valid(m: str) -> bool:
    d = _digits(m)
    return 13 <= len(d) <= 19 and _card_network(d) and _luhn(d)


_IBAN_LENGTHS = dict(
    x.split(":")
    for x in (
        "AD:24 AE:23 AL:28 AT:20 AZ:28 BA:20 BE:16 BG:22 BH:22 BR:29 BY:28 CH:21 CR:22 CY:28 CZ:24 "
        "DE:22 DK:18 DO:28 EE:20 EG:29 ES:24 FI:18 FO:18 FR:27 GB:22 GE:22 GI:23 GL:18 GR:27 GT:28 "
        "HR:21 HU:28 IE:22 IL:23 IQ:23 IS:26 IT:27 JO:30 KW:30 KZ:20 LB:28 LC:32 LI:21 LT:20 LU:20 "
        "LV:21 LY:25 MC:27 MD:24 ME:22 MK:19 MR:27 MT:31 MU:30 NL:18 NO:15 PK:24 PL:28 PS:29 PT:25 "
        "QA:29 RO:24 RS:22 SA:24 SC:31 SD:18 SE:24 SI:19 SK:24 SM:27 ST:25 SV:28 TL:23 TN:24 TR:26 "
        "UA:29 VA:22 VG:24 XK:20"
    ).split()
)


def _iban_valid(m: str) -> bool:
    s = m.replace(" ", "").upper()
    if _IBAN_LENGTHS.get(s[:2]) != str(len(s)):
        return False
    rem = 0
    for ch in s[4:] + s[:4]:
        c = ord(ch)
        if 48 <= c <= 57:
            rem = (rem * 10 + c - 48) % 97
        elif 65 <= c <= 90:
            rem = (rem * 100 + c - 55) % 97
        else:
            return False
    return rem == 1


def _ssn_valid(m: str) -> bool:
    d = _digits(m)
    return len(d) == 9 and d[:3] not in ("000", "666") and d[0] != "9" and d[3:5] != "00" and d[5:] != "0000"


def _ipv4_valid(m: str) -> bool:
    parts = m.split(".")
    if len(parts) != 4:
        return False
    for p in parts:
        if not p or len(p) > 3 or (len(p) > 1 and p[0] == "0") or int(p) > 255:
            return False
    return True


def _ipv6_valid(m: str) -> bool:
    if not re.search(r"[0-9A-Fa-f]", m):
        return False
    if "::" not in m and len(m.split(":")) < 8 and not re.search(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$", m):
        return False
    try:
        ipaddress.IPv6Address(m)
    except ValueError:
        return False
    # node:net refuses an embedded IPv4 part with leading zeros, as ipaddress does.
    return True


def _balanced(s: str) -> bool:
    o, c = s.find("("), s.find(")")
    if o < 0 and c < 0:
        return True
    return o >= 0 and c > o and s.find("(", o + 1) < 0 and s.find(")", c + 1) < 0


def _phone_intl_valid(m: str) -> bool:
    return 8 <= len(_digits(m)) <= 15 and _balanced(m)


def _phone_nanp_valid(m: str) -> bool:
    d = _digits(m)
    nat = d[1:] if len(d) == 11 and d[0] == "1" else d
    return len(nat) == 10 and nat[0] >= "2" and nat[3] >= "2" and _balanced(m)


def _phone_trunk_valid(m: str) -> bool:
    return 9 <= len(_digits(m)) <= 11 and _balanced(m)


def _email_valid(m: str) -> bool:
    local = m[: m.rfind("@")]
    return len(local) > 0 and local[0] != "." and not local.endswith(".") and ".." not in local


def _jwt_valid(m: str) -> bool:
    p = m.split(".")
    return len(p) == 3 and len(p[0]) >= 10 and len(p[1]) >= 10


def _auth_valid(s: str) -> bool:
    ws = re.search(r"\s", s)
    return re.search(r"[0-9._~+/=-]", s[ws.start() if ws else -1 :]) is not None


# ---------------------------------------------------------------------------------------------
# Patterns (the server's, linear: bounded quantifiers and a lookbehind on the leading class)

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?){0,8}\.[A-Za-z]{2,24}(?![A-Za-z0-9-])"
)
_CARD = re.compile(r"(?<![0-9A-Za-z_.])[0-9](?:[ -]?[0-9]){12,18}(?![0-9A-Za-z_]|[.,][0-9])")
_SSN = re.compile(r"(?<![0-9A-Za-z_-])[0-9]{3}(?:-[0-9]{2}-| [0-9]{2} )[0-9]{4}(?![0-9A-Za-z_-])")
_PHONE_INTL = re.compile(r"(?<![0-9A-Za-z_+])\+[1-9][0-9 ().-]{6,22}[0-9](?![0-9A-Za-z_])")
_PHONE_NANP = re.compile(
    r"(?<![0-9A-Za-z_+.-])(?:\+?1[ .-]?)?(?:\([2-9][0-9]{2}\)[ .-]?|[2-9][0-9]{2}[ .-])[2-9][0-9]{2}"
    r"[ .-][0-9]{4}(?![0-9A-Za-z_]|[.-][0-9])"
)
_PHONE_TRUNK = re.compile(
    r"(?<![0-9A-Za-z_+.-])0[0-9]{1,4}(?:[ .-][0-9]{2,8}){1,4}(?![0-9A-Za-z_]|[.-][0-9])"
)
_IPV4 = re.compile(
    r"[0-9](?<![0-9A-Za-z_.][0-9])[0-9]{0,2}\.(?:[0-9]{1,3}\.){2}[0-9]{1,3}(?![0-9A-Za-z_]|\.[0-9])"
)
_H = "[0-9A-Fa-f]{1,4}"
_IPV6 = re.compile(
    rf"(?<![0-9A-Za-z_:.])(?:(?:{_H}:){{7}}{_H}|(?:{_H}(?::{_H}){{0,6}})?::(?:{_H}(?::{_H}){{0,6}})?)"
    r"(?:\.[0-9]{1,3}){0,3}(?![0-9A-Za-z_:])"
)
_JWT = re.compile(
    r"(?<![A-Za-z0-9_.-])eyJ[A-Za-z0-9_-]{7,8192}\.eyJ[A-Za-z0-9_-]{7,16384}\.[A-Za-z0-9_-]{0,8192}"
    r"(?![A-Za-z0-9_-])"
)
_AUTH_VALUE = re.compile(
    r"(?<![A-Za-z0-9_-])(?:[Bb]earer|[Bb]asic|[Tt]oken|BEARER|BASIC)[ \t]{1,8}[A-Za-z0-9._~+/-]{8,4096}"
    r"={0,2}(?![A-Za-z0-9._~+/=-])"
)
_API_KEY_PREFIX = re.compile(
    r"^(?:(?:sk|rk)_(?:live|test)_|whsec_|AKIA|ASIA|ABIA|ACCA|gh[pousr]_|github_pat_|xox[bpaors]-|AIza"
    r"|glpat-|npm_|SG\.|sk-proj-|sk-ant-api03-|sk-)"
)
_API_KEY = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    + "|".join(
        [
            r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,247}",
            r"whsec_[A-Za-z0-9+/=]{24,64}",
            r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}",
            r"gh[pousr]_[A-Za-z0-9]{36,251}",
            r"github_pat_[A-Za-z0-9_]{22,247}",
            r"xox[bpaors]-[A-Za-z0-9-]{10,250}",
            r"AIza[A-Za-z0-9_-]{35}",
            r"glpat-[A-Za-z0-9_-]{20,50}",
            r"npm_[A-Za-z0-9]{36}",
            r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
            r"sk-(?:proj-|ant-api03-)?[A-Za-z0-9_-]{32,200}",
        ]
    )
    + r")(?![A-Za-z0-9_-])"
)
_IBAN = re.compile(
    r"(?<![0-9A-Za-z_])[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![0-9A-Za-z_])"
)


def _is_hex(c: str) -> bool:
    return c in "0123456789ABCDEFabcdef"


def _ipv6_gate(t: str) -> bool:
    if "::" in t:
        return True
    i = t.find(":")
    while 0 < i < len(t) - 1:
        if _is_hex(t[i - 1]) and _is_hex(t[i + 1]):
            return True
        i = t.find(":", i + 1)
    return False


_API_KEY_GATE = re.compile(r"SG\.|A(?:KIA|SIA|BIA|CCA|Iza)")
_AUTH_GATE = re.compile(r"earer|asic|oken|EARER|ASIC")


def _keep_scheme(s: str) -> str:
    m = re.match(r"(\S+\s+)", s)
    return m.group(1) + mask_text(s[len(m.group(1)) :]) if m else mask_text(s)


def _email_partial(s: str) -> str:
    at = s.rfind("@")
    return mask_text(s[:at]) + s[at:]


def _ipv4_partial(s: str) -> str:
    i = s.rfind(".")
    return s[: i + 1] + mask_text(s[i + 1 :])


def _ipv6_partial(s: str) -> str:
    i = -1
    for _ in range(3):
        i = s.find(":", i + 1)
        if i < 0:
            return mask_text(s)
    return s[:i] + mask_text(s[i:])


def _jwt_partial(s: str) -> str:
    i = s.find(".")
    return s[:i] + mask_text(s[i:])


def _api_key_partial(s: str) -> str:
    m = _API_KEY_PREFIX.match(s)
    return _keep_prefix(s, len(m.group(0)) if m else 0)


@dataclass(frozen=True)
class _Pattern:
    re: re.Pattern[str]
    min_length: int
    validate: Callable[[str], bool] | None = None
    gate: Callable[[str], bool] | None = None


@dataclass(frozen=True)
class Detector:
    type: str
    patterns: tuple[_Pattern, ...]
    keep_partial: Callable[[str], str]
    key: Callable[[str], bool] | None = None


def _has(sub: str) -> Callable[[str], bool]:
    return lambda t: sub in t


DETECTORS: dict[str, Detector] = {
    "email": Detector("email", (_Pattern(_EMAIL, 6, _email_valid, _has("@")),), _email_partial),
    "card": Detector(
        "card", (_Pattern(_CARD, 13, _card_valid),), lambda s: _mask_all_but_last(s, 4, _is_digit)
    ),
    "ssn": Detector("ssn", (_Pattern(_SSN, 11, _ssn_valid),), lambda s: _mask_all_but_last(s, 4, _is_digit)),
    "phone": Detector(
        "phone",
        (
            _Pattern(_PHONE_INTL, 9, _phone_intl_valid, _has("+")),
            _Pattern(_PHONE_NANP, 12, _phone_nanp_valid),
            _Pattern(_PHONE_TRUNK, 10, _phone_trunk_valid, _has("0")),
        ),
        lambda s: _mask_all_but_last(s, 2, _is_digit),
    ),
    "ipv4": Detector("ipv4", (_Pattern(_IPV4, 7, _ipv4_valid, _has(".")),), _ipv4_partial),
    "ipv6": Detector("ipv6", (_Pattern(_IPV6, 3, _ipv6_valid, _ipv6_gate),), _ipv6_partial),
    "jwt": Detector("jwt", (_Pattern(_JWT, 30, _jwt_valid, _has("eyJ")),), _jwt_partial),
    "authorization": Detector(
        "authorization",
        (_Pattern(_AUTH_VALUE, 14, _auth_valid, lambda t: _AUTH_GATE.search(t) is not None),),
        _keep_scheme,
        is_authorization_key,
    ),
    "api_key": Detector(
        "api_key",
        (
            _Pattern(
                _API_KEY,
                20,
                None,
                lambda t: "_" in t or "-" in t or _API_KEY_GATE.search(t) is not None,
            ),
        ),
        _api_key_partial,
    ),
    "iban": Detector(
        "iban", (_Pattern(_IBAN, 15, _iban_valid),), lambda s: s[:2] + _mask_all_but_last(s[2:], 4)
    ),
    "password": Detector("password", (), lambda s: "", is_secret_key),
}


# ---------------------------------------------------------------------------------------------
# Custom patterns

# What RE2 refuses and Python's `re` would run: backreferences, lookarounds, possessive and atomic
# groups, conditionals. Such a rule is skipped, as the server's engine skips it.
_NOT_RE2 = re.compile(r"\\[1-9]|\\g<|\(\?P=|\(\?[=!]|\(\?<[=!]|\(\?>|\(\?\(|[*+?}]\+")


def compile_custom(pattern: object) -> re.Pattern[str]:
    if not isinstance(pattern, str) or not pattern:
        raise ValueError("a custom type needs a non-empty pattern")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise ValueError(f"longer than {MAX_PATTERN_LENGTH} characters")
    bad = _NOT_RE2.search(pattern)
    if bad:
        raise ValueError(f"invalid pattern at position {bad.start()}: not RE2 syntax")
    # RE2's `(?i)` and friends are Python's too; a group name `(?P<n>…)` is the same.
    return re.compile(pattern)


def _custom_matches(rx: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in rx.finditer(text) if m.end() > m.start()]


# ---------------------------------------------------------------------------------------------
# Matchers and plans


@dataclass
class Matcher:
    type: str
    level: str
    detector: Detector | None
    custom: re.Pattern[str] | None
    cache: dict[str, bool] = field(default_factory=dict)


@dataclass
class Plan:
    values: list[Matcher]
    keys: list[Matcher]

    @property
    def empty(self) -> bool:
        return not self.values and not self.keys

    @property
    def has_custom_values(self) -> bool:
        return any(v.custom is not None for v in self.values)

    @property
    def key_hint(self) -> re.Pattern[str] | None:
        if any(k.custom is not None for k in self.keys) or not self.keys:
            return None
        return _KEY_HINT


EMPTY_PLAN = Plan([], [])
_KEY_HINT = re.compile(r"pass|pwd|secret|token|key|credential|cookie|session|pin|cvv|cvc|otp|auth", re.I)
_JSON_KEY_HINT = re.compile(
    r"(?:pass|pwd|secret|token|key|credential|cookie|session|pin|cvv|cvc|otp|auth)"
    r"[^\"\\]{0,128}\"[ \t\r\n]{0,16}:",
    re.I,
)


def key_match(plan: Plan, name: str) -> Matcher | None:
    for k in plan.keys:
        hit = k.cache.get(name)
        if hit is None:
            if k.detector is not None:
                hit = bool(k.detector.key and k.detector.key(name))
            else:
                assert k.custom is not None
                hit = k.custom.search(name) is not None
            if len(k.cache) >= 10_000:
                k.cache.clear()
            k.cache[name] = hit
        if hit:
            return k
    return None


def may_hold(plan: Plan, text: str, is_json: bool = False) -> bool:
    if is_json and "\\" in text:
        return True
    if plan.has_custom_values:
        return True
    if plan.keys:
        hint = plan.key_hint
        if hint is None or (_JSON_KEY_HINT.search(text) if is_json else hint.search(text)):
            return True
    for v in plan.values:
        if v.detector is None:
            continue
        for p in v.detector.patterns:
            if len(text) < p.min_length or (p.gate and not p.gate(text)):
                continue
            if p.re.search(text):
                return True
    return False


def full_text(t: str) -> str:
    return f"[REDACTED:{t}]"


def _custom_partial(s: str) -> str:
    if sum(1 for c in s if _alnum(c)) < 8:
        return mask_text(s)
    return _mask_all_but_last(s, 4)


def apply_level(text: str, type_: str, level: str, detector: Detector | None) -> str:
    if level == "full":
        return full_text(type_)
    if level == "mask":
        return mask_text(text)
    if detector is None:
        return _custom_partial(text)
    if detector.type == "password":
        return full_text(type_)
    return detector.keep_partial(text)


def js_string(v: object) -> str:
    """``String(v)`` of JavaScript for a JSON scalar (``true``, ``42``, ``1.5``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e21:
            return str(int(v))
        return repr(v)
    return str(v)


def _mask_deep(v: Any, depth: int = 0) -> Any:
    if isinstance(v, str):
        return mask_text(v)
    if isinstance(v, (bool, int, float)):
        return mask_text(js_string(v))
    if v is None:
        return v
    if depth > MAX_DEPTH:
        return full_text("depth")
    if isinstance(v, list):
        return [_mask_deep(x, depth + 1) for x in v]
    if isinstance(v, dict):
        return {k: _mask_deep(x, depth + 1) for k, x in v.items()}
    return v


def redact_whole(v: Any, m: Matcher, label: str | None = None) -> Any:
    """The redacted form of a whole field value a key matcher claims (null stays null)."""
    lab = label or m.type
    if v is None:
        return v
    if m.level == "full":
        return full_text(lab)
    if m.level == "mask":
        return _mask_deep(v)
    if m.detector is None or m.detector.type == "password":
        return full_text(lab)
    return m.detector.keep_partial(v) if isinstance(v, str) else _mask_deep(v)


@dataclass
class _Span:
    start: int
    end: int
    priority: int
    replacement: str
    type: str


def _value_spans(text: str, plan: Plan, out: list[_Span]) -> None:
    for m in plan.values:
        if m.detector is not None:
            for p in m.detector.patterns:
                if len(text) < p.min_length or (p.gate and not p.gate(text)):
                    continue
                pos = 0
                while True:
                    x = p.re.search(text, pos)
                    if x is None:
                        break
                    s = x.group(0)
                    if p.validate and not p.validate(s):
                        # A rejected candidate: look again one character later.
                        pos = x.start() + 1
                        continue
                    out.append(
                        _Span(x.start(), x.end(), 1, apply_level(s, m.type, m.level, m.detector), m.type)
                    )
                    pos = x.end() if x.end() > x.start() else x.start() + 1
        else:
            assert m.custom is not None
            for a, b in _custom_matches(m.custom, text):
                out.append(_Span(a, b, 1, apply_level(text[a:b], m.type, m.level, None), m.type))


_TEXT_PAIR = re.compile(
    r"(?<![A-Za-z0-9_.-])([\"']?)([A-Za-z_][A-Za-z0-9_.-]{0,63})\1[ \t]{0,3}[:=][ \t]{0,3}"
    r"(\"(?:[^\"\\\n]|\\.){0,1024}\"|'[^'\n]{0,1024}'|[^\s&,;\"'<>=:]{1,1024})"
)
_MARK = re.compile(r"\[REDACTED(?::[^\]\s]{1,100})?\]")


def _pair_spans(text: str, plan: Plan, out: list[_Span]) -> None:
    if not plan.keys:
        return
    if "=" not in text and ":" not in text:
        return
    hint = plan.key_hint
    if hint is not None and not hint.search(text):
        return
    pos = 0
    while True:
        x = _TEXT_PAIR.search(text, pos)
        if x is None:
            return
        raw = x.group(3)
        k = key_match(plan, x.group(2))
        if k is None:
            pos = x.end() - len(raw)
            continue
        start = x.end() - len(raw)
        end = start + len(raw)
        pos = x.end()
        if raw[0] == "[":
            mk = _MARK.match(text, start)
            if mk:
                pos = mk.end()
                continue
        if raw[0] in "\"'":
            start += 1
            end -= 1
        elif k.detector is not None and k.detector.type == "authorization":
            eol = re.search(r"[\r\n]", text[end : end + 4096])
            end = min(len(text), end + 4096) if eol is None else end + eol.start()
        if end <= start:
            continue
        red = redact_whole("" if k.level == "full" else text[start:end], k)
        out.append(_Span(start, end, 0, red if isinstance(red, str) else full_text(k.type), k.type))
        pos = max(pos, end)


def _resolve(spans: list[_Span]) -> list[_Span]:
    if len(spans) <= 1:
        return spans
    ordered = sorted(enumerate(spans), key=lambda p: (p[1].start, p[1].priority, -p[1].end, p[0]))
    out: list[_Span] = []
    reach = -1
    for _, s in ordered:
        if s.start < reach:
            continue
        out.append(s)
        reach = s.end
    return out


def scan_text(text: str, plan: Plan, pairs: bool = False) -> tuple[str, list[str]] | None:
    """The text with each match replaced and the types found, or None when nothing matched."""
    if not text:
        return None
    spans: list[_Span] = []
    if pairs:
        _pair_spans(text, plan, spans)
    _value_spans(text, plan, spans)
    if not spans:
        return None
    out: list[str] = []
    at = 0
    types: list[str] = []
    for s in _resolve(spans):
        if (
            s.priority == 0
            and s.end - s.start == len(s.replacement)
            and text.startswith(s.replacement, s.start)
        ):
            continue
        out.append(text[at : s.start])
        out.append(s.replacement)
        at = s.end
        if s.type not in types:
            types.append(s.type)
    if not types:
        return None
    out.append(text[at:])
    return "".join(out), types


def _json_candidates(text: str, plan: Plan) -> list[tuple[int, int]] | None:
    if plan.has_custom_values or "\\" in text:
        return None
    spans: list[_Span] = []
    _value_spans(text, plan, spans)
    return sorted((s.start, s.end) for s in spans)


# ---------------------------------------------------------------------------------------------
# Formats

_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


def js_json(v: Any) -> str:
    """``JSON.stringify`` of a JSON value."""
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def _member(path: str, key: str) -> str:
    return f"{path}.{key}" if _IDENT.match(key) else f"{path}[{js_json(key)}]"


def redact_json_value(v: Any, plan: Plan, path: str, hit: Hit, depth: int = 0) -> Any:
    if isinstance(v, str):
        r = scan_text(v, plan)
        if not r:
            return v
        for t in r[1]:
            hit(path, t)
        return r[0]
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        if not (float(v).is_integer() and abs(v) >= 1e6):
            return v
        r = scan_text(js_string(v), plan)
        if not r:
            return v
        for t in r[1]:
            hit(path, t)
        return r[0]
    if depth >= MAX_DEPTH:
        hit(path, "depth")
        return full_text("depth")
    if isinstance(v, list):
        out_l: list[Any] | None = None
        for i, x in enumerate(v):
            y = redact_json_value(x, plan, f"{path}[{i}]", hit, depth + 1)
            if _differs(y, x):
                if out_l is None:
                    out_l = list(v)
                out_l[i] = y
        return v if out_l is None else out_l
    if isinstance(v, dict):
        out_d: dict[str, Any] | None = None
        for k, x in v.items():
            km = key_match(plan, k) if plan.keys else None
            if km is not None:
                y = redact_whole(x, km)
                if _differs(y, x):
                    hit(_member(path, k), km.type)
            else:
                y = redact_json_value(x, plan, _member(path, k), hit, depth + 1)
            if _differs(y, x):
                if out_d is None:
                    out_d = dict(v)
                out_d[k] = y
        return v if out_d is None else out_d
    return v


def _differs(a: Any, b: Any) -> bool:
    """JavaScript's ``a !== b``: scalars by value, objects and arrays by identity."""
    if isinstance(a, (str, int, float, bool)) or a is None:
        return type(a) is not type(b) or a != b
    return a is not b


def _reject_constant(name: str) -> Any:
    raise ValueError(name)


def _json_parse(text: str) -> Any:
    """``JSON.parse``: ``NaN`` and ``Infinity`` are not JSON."""
    return json.loads(text, parse_constant=_reject_constant)


_WS = " \n\r\t"


def _string_end(t: str, i: int) -> int:
    j = i + 1
    while True:
        q = t.find('"', j)
        if q < 0:
            return len(t)
        bs = 0
        k = q - 1
        while k > i and t[k] == "\\":
            bs += 1
            k -= 1
        if bs % 2 == 0:
            return q + 1
        j = q + 1


def _decode_string(tok: str) -> str:
    return str(_json_parse(tok)) if "\\" in tok else tok[1:-1]


def _value_end(t: str, i: int) -> int:
    c = t[i]
    if c == '"':
        return _string_end(t, i)
    n = len(t)
    if c in "{[":
        depth = 0
        j = i
        while j < n:
            d = t[j]
            if d == '"':
                j = _string_end(t, j)
                continue
            if d in "{[":
                depth += 1
            elif d in "}]":
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return n
    j = i
    while j < n and t[j] not in _WS and t[j] not in ",}]":
        j += 1
    return j


@dataclass
class _Frame:
    arr: bool
    key: str = ""
    index: int = 0
    key_hit: Matcher | None = None


def _frames_path(stack: list[_Frame]) -> str:
    p = "$"
    for f in stack:
        p = f"{p}[{f.index}]" if f.arr else _member(p, f.key)
    return p


def _splice(text: str, edits: list[tuple[int, int, str]]) -> str:
    out: list[str] = []
    at = 0
    for s, e, r in edits:
        out.append(text[at:s])
        out.append(r)
        at = e
    out.append(text[at:])
    return "".join(out)


def redact_json_text(text: str, plan: Plan, hit: Hit) -> str | None:
    """A JSON text with only the changed tokens rewritten; None when the text is not JSON."""
    try:
        _json_parse(text)
    except ValueError:
        return None
    edits: list[tuple[int, int, str]] = []
    stack: list[_Frame] = []
    n = len(text)
    i = 0
    hot = _json_candidates(text, plan) if plan.values else []
    h = 0

    def may_match(start: int, end: int) -> bool:
        nonlocal h
        if hot is None:
            return True
        while h < len(hot) and hot[h][1] <= start:
            h += 1
        return h < len(hot) and hot[h][0] < end

    def ws(j: int) -> int:
        while j < n and text[j] in _WS:
            j += 1
        return j

    def replace(start: int, end: int, found: tuple[str, list[str]]) -> None:
        """The value at text[start:end] becomes the redacted text's JSON; its types are hits at its path."""
        edits.append((start, end, js_json(found[0])))
        p = _frames_path(stack)
        for t in found[1]:
            hit(p, t)

    i = ws(i)
    state = "value"
    while i < n:
        if state == "value":
            top = stack[-1] if stack else None
            km = top.key_hit if top is not None and not top.arr else None
            c = text[i]
            if km is not None:
                end = _value_end(text, i)
                v = _json_parse(text[i:end])
                red = redact_whole(v, km)
                if _differs(red, v):
                    edits.append((i, end, js_json(red)))
                    hit(_frames_path(stack), km.type)
                i = end
                state = "after"
            elif c in "{[":
                if len(stack) >= MAX_DEPTH:
                    end = _value_end(text, i)
                    edits.append((i, end, js_json(full_text("depth"))))
                    hit(_frames_path(stack), "depth")
                    i = end
                    state = "after"
                    continue
                arr = c == "["
                stack.append(_Frame(arr))
                i = ws(i + 1)
                if i < n and text[i] == ("]" if arr else "}"):
                    stack.pop()
                    i += 1
                    state = "after"
                else:
                    state = "value" if arr else "key"
            elif c == '"':
                end = _string_end(text, i)
                r = scan_text(_decode_string(text[i:end]), plan) if may_match(i, end) else None
                if r:
                    replace(i, end, r)
                i = end
                state = "after"
            else:
                end = _value_end(text, i)
                if end - i >= 7 and c not in "tfn":
                    r = scan_text(text[i:end], plan)
                    if r:
                        replace(i, end, r)
                i = end
                state = "after"
        elif state == "key":
            end = _string_end(text, i)
            key = _decode_string(text[i:end])
            top = stack[-1]
            top.key = key
            top.key_hit = key_match(plan, key) if plan.keys else None
            i = ws(end)
            i = ws(i + 1)
            state = "value"
        else:
            i = ws(i)
            if i >= n or not stack:
                break
            c = text[i]
            top = stack[-1]
            i += 1
            if c == ",":
                i = ws(i)
                if top.arr:
                    top.index += 1
                    state = "value"
                else:
                    state = "key"
            else:
                stack.pop()
                state = "after"
        if state != "value":
            i = ws(i)
    return _splice(text, edits) if edits else text


def _encode_component(s: str) -> str:
    """``encodeURIComponent`` with the redaction marks left readable and spaces as ``+``."""
    return (
        quote(s, safe="-_.!~*'()")
        .replace("%5B", "[")
        .replace("%5D", "]")
        .replace("%3A", ":")
        .replace("%20", "+")
    )


def _decode_component(s: str) -> str | None:
    if "%" not in s and "+" not in s:
        return s
    t = s.replace("+", " ")
    if re.search(r"%(?![0-9A-Fa-f]{2})", t):
        return None
    try:
        return unquote(t, errors="strict")
    except UnicodeDecodeError:
        return None


def redact_pairs(text: str, plan: Plan, hit: Hit, path_of: Callable[[str], str]) -> str | None:
    pieces = text.split("&")
    changed = False
    for idx, piece in enumerate(pieces):
        if piece == "":
            continue
        eq = piece.find("=")
        raw_name = piece if eq < 0 else piece[:eq]
        raw_value = "" if eq < 0 else piece[eq + 1 :]
        name = _decode_component(raw_name)
        value = _decode_component(raw_value)
        if name is None or value is None:
            return None
        if eq < 0 or raw_value == "":
            continue
        km = key_match(plan, name) if plan.keys else None
        nxt: str | None = None
        types: list[str] = []
        if km is not None:
            red = redact_whole(value, km)
            nxt = red if isinstance(red, str) else full_text(km.type)
            types = [km.type]
        else:
            r = scan_text(value, plan)
            if r:
                nxt, types = r
        if nxt is not None and nxt != value:
            pieces[idx] = f"{raw_name}={_encode_component(nxt)}"
            changed = True
            for t in types:
                hit(path_of(name), t)
    return "&".join(pieces) if changed else text


def redact_form(text: str, plan: Plan, hit: Hit) -> str | None:
    if re.search(r"\s", text.strip()):
        return None
    return redact_pairs(text, plan, hit, lambda n: n)


def redact_url(
    url: str,
    path_plan: Plan | None,
    query_plan: Plan | None,
    path_hit: Callable[[str], None],
    query_hit: Hit,
    name: str,
) -> str:
    h = url.find("#")
    q = url.find("?")
    if h >= 0 and q > h:
        q = -1
    head_end = q if q >= 0 else h if h >= 0 else len(url)
    head = url[:head_end]
    query = url[q + 1 : h if h >= 0 else len(url)] if q >= 0 else None
    frag = url[h + 1 :] if h >= 0 else None
    changed = False

    def scan_pieces(s: str) -> str:
        assert path_plan is not None
        parts = s.split("/")
        any_ = False
        for i, raw in enumerate(parts):
            if len(raw) < 3:
                continue
            decoded = _decode_component(raw) if "%" in raw else raw
            r = scan_text(decoded if decoded is not None else raw, path_plan)
            if not r:
                continue
            for t in r[1]:
                path_hit(t)
            parts[i] = _encode_component(r[0]) if decoded is not None and decoded != raw else r[0]
            any_ = True
        return "/".join(parts) if any_ else s

    def scan_fragment(s: str) -> str:
        assert path_plan is not None
        eq = s.find("=")
        if eq < 0:
            return scan_pieces(s) if "%" in s or may_hold(path_plan, s) else s
        qm = s.find("?")
        cut = qm + 1 if 0 <= qm < eq else 0
        lead, pairs = s[:cut], s[cut:]
        nl = scan_pieces(lead) if lead and ("%" in lead or may_hold(path_plan, lead)) else lead
        np = redact_pairs(pairs, path_plan, lambda _p, t: path_hit(t), lambda p: p)
        if np is None:
            r = scan_text(pairs, path_plan, True)
            if r:
                for t in r[1]:
                    path_hit(t)
            np = r[0] if r else pairs
        return s if nl == lead and np == pairs else nl + np

    if path_plan is not None and ("%" in head or may_hold(path_plan, head)):
        nh = scan_pieces(head)
        if nh != head:
            head = nh
            changed = True
    if path_plan is not None and frag:
        nf = scan_fragment(frag)
        if nf != frag:
            frag = nf
            changed = True
    if query_plan is not None and query:
        held: list[tuple[str, str]] = []
        nq = redact_pairs(query, query_plan, lambda p, t: held.append((p, t)), lambda p: p)
        if nq is None:
            r = scan_text(query, query_plan, True)
            if r:
                for t in r[1]:
                    query_hit(name, t)
                query = r[0]
                changed = True
        elif nq != query:
            for p, t in held:
                query_hit(p, t)
            query = nq
            changed = True
    if not changed:
        return url
    return head + (f"?{query}" if query is not None else "") + (f"#{frag}" if frag is not None else "")


def redact_userinfo(text: str, km: Matcher, host: bool) -> str:
    span = userinfo_password_span(text, host)
    if span is None:
        return text
    raw = text[span[0] : span[1]]
    dec = _decode_component(raw)
    red = redact_whole(dec if dec is not None else raw, km)
    nxt = _encode_component(red if isinstance(red, str) else full_text(km.type))
    return text if nxt == raw else text[: span[0]] + nxt + text[span[1] :]


# XML

_XML_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}
_XML_ENTITY = re.compile(r"&(#x[0-9A-Fa-f]{1,6}|#[0-9]{1,7}|lt|gt|amp|quot|apos);")


def _decode_xml(s: str) -> str:
    if "&" not in s:
        return s

    def sub(m: re.Match[str]) -> str:
        e = m.group(1)
        if e[0] != "#":
            return _XML_ENTITIES[e]
        cp = int(e[2:], 16) if e[1] == "x" else int(e[1:], 10)
        return chr(cp) if cp <= 0x10FFFF else m.group(0)

    return _XML_ENTITY.sub(sub, s)


def _encode_xml(s: str, q: str | None) -> str:
    out = re.sub(r"&(?![A-Za-z_][A-Za-z0-9._-]{0,31};)", "&amp;", s)
    out = re.sub(r"&(lt|gt|amp|quot|apos);", r"&amp;\1;", out)
    out = out.replace("<", "&lt;").replace(">", "&gt;")
    if q == '"':
        out = out.replace('"', "&quot;")
    elif q == "'":
        out = out.replace("'", "&apos;")
    return out


_XML_NAME = re.compile("[A-Za-z_:\u00c0-\uffff][A-Za-z0-9_.:\u00b7\u00c0-\uffff-]{0,255}")


def _xml_key_match(plan: Plan, name: str) -> Matcher | None:
    if not plan.keys:
        return None
    direct = key_match(plan, name)
    if direct is not None:
        return direct
    colon = name.find(":")
    return key_match(plan, name[colon + 1 :]) if colon >= 0 else None


def redact_xml(text: str, plan: Plan, hit: Hit) -> str | None:
    """An XML document with only the changed spans rewritten; None when it is not well formed."""
    n = len(text)
    edits: list[tuple[int, int, str]] = []
    stack: list[tuple[str, Matcher | None]] = []
    root_seen = False
    i = 0

    def path_of() -> str:
        return "/" + "/".join(f[0] for f in stack)

    def text_node(start: int, end: int, cdata: bool) -> bool:
        raw = text[start:end]
        if not stack:
            return raw.strip(" \t\r\n") == "" and re.fullmatch(r"\s*", raw) is not None
        if re.fullmatch(r"\s*", raw):
            return True
        value = raw if cdata else _decode_xml(raw)
        claimed = stack[-1][1]
        nxt: str | None = None
        if claimed is not None:
            red = redact_whole(value, claimed)
            nxt = red if isinstance(red, str) else full_text(claimed.type)
            hit(path_of(), claimed.type)
        else:
            r = scan_text(value, plan)
            if r:
                nxt = r[0]
                p = path_of()
                for t in r[1]:
                    hit(p, t)
        if nxt is not None:
            edits.append((start, end, nxt.replace("]]>", "]]&gt;") if cdata else _encode_xml(nxt, None)))
        return True

    while i < n:
        lt = text.find("<", i)
        if lt < 0:
            if not text_node(i, n, False):
                return None
            break
        if lt > i and not text_node(i, lt, False):
            return None
        if text.startswith("<?", lt):
            end = text.find("?>", lt + 2)
            if end < 0:
                return None
            i = end + 2
        elif text.startswith("<!--", lt):
            end = text.find("-->", lt + 4)
            if end < 0:
                return None
            i = end + 3
        elif text.startswith("<![CDATA[", lt):
            end = text.find("]]>", lt + 9)
            if end < 0 or not stack:
                return None
            text_node(lt + 9, end, True)
            i = end + 3
        elif text.startswith("<!", lt):
            if root_seen:
                return None
            bracket = text.find("[", lt)
            end = text.find(">", lt)
            if 0 <= bracket < end:
                close = text.find("]", bracket)
                if close < 0:
                    return None
                end = text.find(">", close)
            if end < 0:
                return None
            i = end + 1
        elif lt + 1 < n and text[lt + 1] == "/":
            m = _XML_NAME.match(text, lt + 2)
            if not m:
                return None
            j = m.end()
            while j < n and text[j] in _WS:
                j += 1
            if j >= n or text[j] != ">":
                return None
            if not stack or stack.pop()[0] != m.group(0):
                return None
            i = j + 1
        else:
            m = _XML_NAME.match(text, lt + 1)
            if not m:
                return None
            if not stack and root_seen:
                return None
            name = m.group(0)
            parent = stack[-1] if stack else None
            claimed = (
                parent[1] if parent is not None and parent[1] is not None else _xml_key_match(plan, name)
            )
            j = lt + 1 + len(name)
            self_closing = False
            while True:
                before = j
                while j < n and text[j] in _WS:
                    j += 1
                if j >= n:
                    return None
                if text[j] == ">":
                    j += 1
                    break
                if text[j] == "/" and j + 1 < n and text[j + 1] == ">":
                    self_closing = True
                    j += 2
                    break
                if j == before:
                    return None
                a = _XML_NAME.match(text, j)
                if not a:
                    return None
                j = a.end()
                while j < n and text[j] in _WS:
                    j += 1
                if j >= n or text[j] != "=":
                    return None
                j += 1
                while j < n and text[j] in _WS:
                    j += 1
                if j >= n or text[j] not in "\"'":
                    return None
                qch = text[j]
                v_end = text.find(qch, j + 1)
                if v_end < 0:
                    return None
                raw = text[j + 1 : v_end]
                if "<" in raw:
                    return None
                if raw:
                    value = _decode_xml(raw)
                    km = claimed if claimed is not None else _xml_key_match(plan, a.group(0))
                    path = "/" + "/".join([*(f[0] for f in stack), name]) + "/@" + a.group(0)
                    nxt: str | None = None
                    if km is not None:
                        red = redact_whole(value, km)
                        nxt = red if isinstance(red, str) else full_text(km.type)
                        hit(path, km.type)
                    else:
                        r = scan_text(value, plan)
                        if r:
                            nxt = r[0]
                            for t in r[1]:
                                hit(path, t)
                    if nxt is not None:
                        edits.append((j + 1, v_end, _encode_xml(nxt, qch)))
                j = v_end + 1
            root_seen = True
            if not self_closing:
                stack.append((name, claimed))
            i = j
    if stack or not root_seen:
        return None
    return _splice(text, edits) if edits else text


# ---------------------------------------------------------------------------------------------
# Rules


@dataclass
class _Rule:
    sid: str
    scopes: frozenset[str]
    everywhere: bool
    environments: frozenset[str] | None
    value: Matcher | None
    key: Matcher | None


_CUSTOM_TYPE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")


def _rule(r: Mapping[str, Any]) -> _Rule:
    level = r.get("level")
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}")
    given_raw = r.get("scopes")
    given: list[Any] = list(given_raw) if isinstance(given_raw, list) and given_raw else ["*"]
    scopes: set[str] = set()
    for s in given:
        if s == "*":
            scopes.update(SCOPES)
        elif s in SCOPES:
            scopes.add(s)
        else:
            raise ValueError(f"unknown scope {js_json(s)}")
    envs_raw = r.get("environments")
    envs = frozenset(envs_raw) if isinstance(envs_raw, list) and envs_raw else None
    sid = str(r.get("sid"))
    type_ = r.get("type")
    if isinstance(type_, str) and type_ in DETECTORS:
        d = DETECTORS[type_]
        return _Rule(
            sid,
            frozenset(scopes),
            "*" in given,
            envs,
            Matcher(type_, level, d, None) if d.patterns else None,
            Matcher(type_, level, d, None) if d.key else None,
        )
    if not isinstance(type_, str) or not _CUSTOM_TYPE.match(type_):
        raise ValueError("type must be a predefined type or a custom type name")
    apply_to = r.get("applyTo")
    if apply_to not in ("key", "value"):
        raise ValueError("a custom type needs applyTo `key` or `value`")
    rx = compile_custom(r.get("pattern") or "")
    m = Matcher(type_, level, None, rx)
    return _Rule(
        sid,
        frozenset(scopes),
        "*" in given,
        envs,
        None if apply_to == "key" else m,
        m if apply_to == "key" else None,
    )


@dataclass
class Plans:
    scopes: dict[str, Plan]
    url_query: Plan
    record: Plan


def _plans_of(rules: Sequence[_Rule], env: str) -> Plans | None:
    applicable = [r for r in rules if not env or r.environments is None or env in r.environments]
    if not applicable:
        return None

    def plan_of(chosen: list[_Rule]) -> Plan:
        if not chosen:
            return EMPTY_PLAN
        return Plan([r.value for r in chosen if r.value], [r.key for r in chosen if r.key])

    def plan(scopes: Sequence[str]) -> Plan:
        return plan_of([r for r in applicable if any(s in r.scopes for s in scopes)])

    return Plans(
        {s: plan([s]) for s in SCOPES},
        plan(["request.query", "request.url"]),
        plan_of([r for r in applicable if r.everywhere]),
    )


@dataclass
class SensitiveRules:
    """Compiled Shape A redactions; ``skipped`` lists the rules that do not compile."""

    rules: list[_Rule]
    skipped: list[dict[str, str]]
    _by_env: dict[str, Plans | None] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.rules)

    def plans_for(self, env: str) -> Plans | None:
        if env not in self._by_env:
            if len(self._by_env) > 1000:
                self._by_env.clear()
            self._by_env[env] = _plans_of(self.rules, env)
        return self._by_env[env]


def compile_sensitive(rules: Sequence[object]) -> SensitiveRules:
    """Compiles the ``sensitiveRules`` of a ``/sdk`` answer, in order; bad ones go to ``skipped``."""
    out: list[_Rule] = []
    skipped: list[dict[str, str]] = []
    for i, r in enumerate(rules):
        raw_sid = r.get("sid") if isinstance(r, Mapping) else None
        sid = raw_sid if isinstance(raw_sid, str) and raw_sid else f"#{i}"
        if not isinstance(r, Mapping) or not isinstance(r.get("type"), str):
            skipped.append({"sid": sid, "error": "not a rule"})
            continue
        if r.get("enabled") is False or r.get("deletedAt"):
            continue
        try:
            out.append(_rule({**r, "sid": sid}))
        except (ValueError, re.error) as err:
            skipped.append({"sid": sid, "error": str(err)})
    return SensitiveRules(out, skipped)


# ---------------------------------------------------------------------------------------------
# A record


def _content_type(part: Mapping[str, Any]) -> str:
    ct = part.get("contentType")
    if isinstance(ct, str) and ct:
        return ct.lower()
    headers = part.get("headers")
    if isinstance(headers, Mapping):
        for k, v in headers.items():
            if k.lower() == "content-type" and isinstance(v, str):
                return v.lower()
    return ""


def body_kind(content_type: str, body: str) -> str:
    ct = content_type.split(";")[0].strip()
    if ct == "application/x-www-form-urlencoded":
        return "form"
    if re.search(r"(?:^|[/+])json$", ct):
        return "json"
    if re.search(r"(?:^|[/+])xml$", ct):
        return "xml"
    if ct:
        return "text"
    first = body.lstrip(" \n\r\t\ufeff")[:1]
    return "json" if first in ("{", "[") else "xml" if first == "<" else "text"


def _attempt(hit: Hit, f: Callable[[Hit], str | None]) -> str | None:
    held: list[tuple[str, str]] = []
    out = f(lambda p, t: held.append((p, t)))
    if out is not None:
        for p, t in held:
            hit(p, t)
    return out


def _redact_body(body: Any, content_type: str, plan: Plan, hit: Hit) -> Any:
    if body is None:
        return body
    if not isinstance(body, str):
        return redact_json_value(body, plan, "$", hit)
    if not body:
        return body
    kind = body_kind(content_type, body)
    if not may_hold(plan, body, kind == "json"):
        return body
    out: str | None = None
    if kind == "json":
        out = _attempt(hit, lambda h: redact_json_text(body, plan, h))
    elif kind == "xml":
        out = _attempt(hit, lambda h: redact_xml(body, plan, h))
    elif kind == "form":
        out = _attempt(hit, lambda h: redact_form(body, plan, h))
    if out is not None:
        return out
    r = scan_text(body, plan, True)
    if not r:
        return body
    for t in r[1]:
        hit("$", t)
    return r[0]


def _at(hit: Hit, path: str) -> Hit:
    """A hit that reports under ``path`` whatever path the format gives."""
    return lambda _p, t: hit(path, t)


def _scan_free(v: str, plan: Plan, path: str, hit: Hit) -> str:
    r = scan_text(v, plan, True)
    if not r:
        return v
    for t in r[1]:
        hit(path, t)
    return r[0]


def _redact_headers(headers: Mapping[str, Any], plan: Plan, hit: Hit) -> Mapping[str, Any]:
    out: dict[str, Any] | None = None
    for name, v in headers.items():
        km = key_match(plan, name) if plan.keys else None
        nxt: Any = v
        if km is not None:
            is_pw = km.detector is not None and km.detector.type == "password"
            label = "cookie" if is_pw and re.search(r"(?:^|-)cookie$", name, re.I) else km.type
            nxt = (
                [redact_whole(x, km, label) for x in v] if isinstance(v, list) else redact_whole(v, km, label)
            )
            if nxt != v:
                hit(name, km.type)
        elif isinstance(v, str):
            nxt = _scan_free(v, plan, name, hit)
        elif isinstance(v, list):
            items: list[Any] = []
            for x in v:
                if isinstance(x, str):
                    items.append(_scan_free(x, plan, name, _at(hit, name)))
                else:
                    items.append(redact_json_value(x, plan, name, _at(hit, name)))
            nxt = items if any(a is not b for a, b in zip(items, v, strict=True)) else v
        if nxt is not v:
            if out is None:
                out = dict(headers)
            out[name] = nxt
    return headers if out is None else out


def _redact_query(q: Mapping[str, Any], plan: Plan, hit: Hit) -> Mapping[str, Any]:
    out: dict[str, Any] | None = None
    for name, v in q.items():
        km = key_match(plan, name) if plan.keys else None
        if km is not None:
            nxt = [redact_whole(x, km) for x in v] if isinstance(v, list) else redact_whole(v, km)
            if nxt != v:
                hit(name, km.type)
            else:
                nxt = v
        else:
            nxt = redact_json_value(v, plan, name, _at(hit, name))
        if nxt is not v:
            if out is None:
                out = dict(q)
            out[name] = nxt
    return q if out is None else out


def _redact_tags(tags: list[Any], plan: Plan, hit: Hit) -> list[Any]:
    out: list[Any] | None = None
    for i, t in enumerate(tags):
        if not isinstance(t, dict) or not isinstance(t.get("key"), str):
            continue
        v = t.get("value")
        km = key_match(plan, t["key"]) if plan.keys else None
        nxt: Any = v
        if km is not None:
            red = redact_whole(v, km)
            nxt = red if isinstance(red, str) or red is v else full_text(km.type)
            if nxt != v:
                hit(f"tags.{t['key']}", km.type)
        elif isinstance(v, str):
            r = scan_text(v, plan, True)
            if r:
                nxt = r[0]
                for ty in r[1]:
                    hit(f"tags.{t['key']}", ty)
        if nxt is not v:
            if out is None:
                out = list(tags)
            out[i] = {**t, "value": nxt}
    return tags if out is None else out


def _userinfo_matcher(plan: Plan) -> Matcher | None:
    if not plan.keys:
        return None
    return key_match(plan, "password") or key_match(plan, "authorization")


def redact_sensitive(record: dict[str, Any], compiled: SensitiveRules) -> bool:
    """Applies the rules to a built record in place; True when something was redacted.

    Sizes stay as captured. The record gets no ``redacted`` field: the ingest refuses it on a
    captured record (the server's engine marks the stored record; its output is the same).
    """
    env = record.get("environmentSid")
    plans = compiled.plans_for(env if isinstance(env, str) else "")
    if plans is None:
        return False
    changed = False

    def hit_any(_p: str, _t: str) -> None:
        nonlocal changed
        changed = True

    req = record.get("request")
    if isinstance(req, dict):
        sp = plans.scopes
        if not sp["request.headers"].empty and isinstance(req.get("headers"), dict):
            req["headers"] = _redact_headers(req["headers"], sp["request.headers"], hit_any)
        if not sp["request.query"].empty and isinstance(req.get("queryString"), dict):
            req["queryString"] = _redact_query(req["queryString"], sp["request.query"], hit_any)
        path_plan = None if sp["request.url"].empty else sp["request.url"]
        query_plan = None if plans.url_query.empty else plans.url_query
        if path_plan is not None or query_plan is not None:
            userinfo = _userinfo_matcher(path_plan) if path_plan is not None else None

            def as_url(v: str, fld: str) -> str:
                u = redact_userinfo(v, userinfo, False) if userinfo is not None and fld == "url" else v
                if u != v:
                    hit_any(fld, "")
                return redact_url(u, path_plan, query_plan, lambda t: hit_any(fld, t), hit_any, fld)

            for fld in ("url", "path"):
                v = req.get(fld)
                if isinstance(v, str) and v:
                    req[fld] = as_url(v, fld)
            host = req.get("host")
            if path_plan is not None and isinstance(host, str) and host:
                hh = redact_userinfo(host, userinfo, True) if userinfo is not None else host
                r = scan_text(hh, path_plan)
                if r:
                    hh = r[0]
                if hh != host:
                    hit_any("host", "")
                    req["host"] = hh
            ep = record.get("endpoint")
            if isinstance(ep, str) and ep:
                record["endpoint"] = as_url(ep, "endpoint")
        if not plans.record.empty:
            for fld in ("note", "contextSid"):
                v = record.get(fld)
                if isinstance(v, str) and v:
                    record[fld] = _scan_free(v, plans.record, fld, hit_any)
            tags = record.get("tags")
            if isinstance(tags, list) and tags:
                record["tags"] = _redact_tags(tags, plans.record, hit_any)
        if not sp["request.body"].empty and req.get("body") is not None:
            req["body"] = _redact_body(req["body"], _content_type(req), sp["request.body"], hit_any)
        res = record.get("response")
        if isinstance(res, dict):
            ct = _content_type(res)
            if not sp["response.headers"].empty and isinstance(res.get("headers"), dict):
                res["headers"] = _redact_headers(res["headers"], sp["response.headers"], hit_any)
            if not sp["response.body"].empty and res.get("body") is not None:
                res["body"] = _redact_body(res["body"], ct, sp["response.body"], hit_any)
    return changed
