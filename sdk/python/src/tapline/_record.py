"""Captures and the records built from them (the ingest schema, schemas/request-record.schema.ts).

On the host's request path an adapter only collects what it sees into a ``Capture`` (headers as
pairs, body bytes up to the limit, clock readings); the record is built from it later, on the
delivery thread, so the request path does no JSON, no sid and no date formatting.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

Headers = list[tuple[str, str]]
#: headers as the server hands them to an adapter: str pairs, or ASGI's latin-1 byte pairs
RawHeaders = list[tuple[str, str]] | list[tuple[bytes, bytes]]

DEFAULT_BODY_TYPES = (
    "application/json",
    "+json",
    "text/",
    "application/xml",
    "+xml",
    "application/x-www-form-urlencoded",
    "application/graphql",
)

MAX_HEADERS = 500
MAX_HEADER_VALUE = 65536


@dataclass(slots=True)
class Capture:
    """One call as an adapter saw it.

    Times: ``started`` is the wall clock (s), ``t0``/``t1``/``first_byte`` are ``perf_counter`` (s).
    """

    direction: str
    method: str
    scheme: str
    host: str | None
    path: str
    query: str
    started: float
    t0: float
    req_headers: RawHeaders
    server_port: int | None = None
    ip: str | None = None
    endpoint: str | None = None
    req_body: bytes | None = None
    req_size: int = 0
    status: int | None = None
    res_headers: RawHeaders = field(default_factory=list)
    res_body: bytes | None = None
    res_size: int = 0
    t1: float = 0.0
    first_byte: float | None = None
    tags: list[dict[str, str]] = field(default_factory=list)
    error: str | None = None
    #: the body's content type is checked when the record is built (bodies of others are dropped)
    check_body_types: bool = True

    def estimate(self) -> int:
        """Bytes the record will take as JSON, roughly and cheaply: the queue's bound counts this."""
        n = 600 + 2 * (len(self.path) + len(self.query)) + (len(self.host) if self.host else 0)
        for pair in self.req_headers:
            n += len(pair[0]) + len(pair[1]) + 6
        for pair in self.res_headers:
            n += len(pair[0]) + len(pair[1]) + 6
        if self.req_body:
            n += len(self.req_body) * 11 // 10 + 2
        if self.res_body:
            n += len(self.res_body) * 11 // 10 + 2
        return n


_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def new_record_sid() -> str:
    """``req_`` + 27 base62 characters (the server's format), made in the client so a batch sent
    twice carries the same sids and the processor stores each record once. Bytes >= 248 are
    skipped so each character is uniform."""
    out: list[str] = []
    while len(out) < 27:
        for b in secrets.token_bytes(32):
            if b < 248:
                out.append(_ALPHABET[b % 62])
                if len(out) == 27:
                    break
    return "req_" + "".join(out)


def iso_time(t: float) -> str:
    """``2026-01-02T03:04:05.678Z`` (what ``Date#toISOString`` writes)."""
    ms = round(t * 1000)
    sec, rem = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + f".{rem:03d}Z"


def body_allowed(content_type: str | None, allowed: tuple[str, ...]) -> bool:
    """Whether a body of this content type is captured (substring match on the media type)."""
    if not content_type:
        return False
    ct = content_type.lower()
    return any(a in ct for a in allowed)


HeaderValue = str | list[str]


def decode_headers(pairs: RawHeaders) -> Headers:
    """ASGI byte pairs as text (latin-1, as HTTP/1.1 carries them); str pairs as they are."""
    out: Headers = []
    for k, v in pairs:
        if isinstance(k, bytes):
            out.append((k.decode("latin-1"), v.decode("latin-1") if isinstance(v, bytes) else str(v)))
        else:
            out.append((k, str(v)))
    return out


def header_dict(pairs: Headers, drop: frozenset[str] | None) -> dict[str, HeaderValue]:
    """Headers as the ingest schema takes them.

    Lower-case names (a repeated name gives a list), at most 500 names, values up to 64 KiB.
    """
    out: dict[str, HeaderValue] = {}
    for name, value in pairs:
        key = name.lower()
        if drop is not None and key in drop:
            continue
        v = value[:MAX_HEADER_VALUE]
        prev = out.get(key)
        if prev is None:
            if len(out) >= MAX_HEADERS:
                continue
            out[key] = v
        elif isinstance(prev, list):
            prev.append(v)
        else:
            out[key] = [prev, v]
    return out


def first_header(pairs: Headers, name: str) -> str | None:
    for k, v in pairs:
        if k.lower() == name:
            return v
    return None


def parse_query(search: str) -> dict[str, HeaderValue]:
    """A query string as URLSearchParams reads it: repeated names become lists, at most 500 names."""
    qs: dict[str, HeaderValue] = {}
    if not search:
        return qs
    for k, v in parse_qsl(search, keep_blank_values=True):
        prev = qs.get(k)
        if prev is None:
            if len(qs) >= 500:
                break
            qs[k] = v
        elif isinstance(prev, list):
            prev.append(v)
        else:
            qs[k] = [prev, v]
    return qs


def split_host(host: str | None) -> tuple[str | None, int | None]:
    """``example.com:8080`` -> (``example.com``, 8080); IPv6 in brackets kept whole."""
    if not host:
        return None, None
    if host.startswith("["):
        end = host.find("]")
        if end > 0 and host[end + 1 : end + 2] == ":" and host[end + 2 :].isdigit():
            return host[: end + 1], int(host[end + 2 :])
        return host, None
    name, sep, port = host.rpartition(":")
    if sep and port.isdigit() and ":" not in name:
        return name, int(port)
    return host, None


def _keep_body(c: Capture, ct: str | None, headers: Headers, body_types: tuple[str, ...]) -> bool:
    """Bodies of the allowed content types only, and never compressed ones."""
    if not c.check_body_types:
        return True
    enc = first_header(headers, "content-encoding")
    if enc and enc.strip().lower() != "identity":
        return False
    return body_allowed(ct, body_types)


def _ms(x: float) -> float:
    return round(x * 1000, 3)


def _text(b: bytes | None) -> str | None:
    if not b:
        return None
    return b.decode("utf-8", errors="replace")


def build_record(
    c: Capture, drop: frozenset[str] | None, body_types: tuple[str, ...] = DEFAULT_BODY_TYPES
) -> dict[str, Any]:
    """The ingest record of a capture (same fields and order as the Node.js SDK's)."""
    req_headers = decode_headers(c.req_headers)
    res_headers = decode_headers(c.res_headers)
    host_name, host_port = split_host(c.host)
    port = host_port if host_port is not None else c.server_port
    default_port = 443 if c.scheme == "https" else 80
    if c.direction == "out" and port is None:
        port = default_port
    path_q = c.path + ("?" + c.query if c.query else "")
    url = f"{c.scheme}://{c.host or 'localhost'}{path_q}"[:16384]
    req_ct = first_header(req_headers, "content-type")
    res_ct = first_header(res_headers, "content-type")
    request: dict[str, Any] = {"host": host_name}
    if c.direction == "in":
        request["ip"] = c.ip
    request.update(
        {
            "method": c.method.upper(),
            "path": c.path[:8192],
            "port": port if port is not None and 0 <= port <= 65535 else None,
            "url": url,
            "queryString": parse_query(c.query),
            "headers": header_dict(req_headers, drop),
            "contentType": req_ct[:512] if req_ct else None,
            "size": c.req_size,
        }
    )
    req_text = _text(c.req_body) if _keep_body(c, req_ct, req_headers, body_types) else None
    if req_text is not None:
        request["body"] = req_text
    response: dict[str, Any] | None = None
    if c.status is not None or c.error is None:
        response = {
            "statusCode": c.status if c.status is not None and 100 <= c.status <= 599 else None,
            "headers": header_dict(res_headers, drop),
            "contentType": res_ct[:512] if res_ct else None,
            "size": c.res_size,
        }
        res_text = _text(c.res_body) if _keep_body(c, res_ct, res_headers, body_types) else None
        if res_text is not None:
            response["body"] = res_text
    end = c.t1 if c.t1 else c.t0
    phases: dict[str, float | None] = {
        "firstByte": _ms(c.first_byte - c.t0) if c.first_byte is not None else None,
        "download": _ms(end - c.first_byte) if c.first_byte is not None else None,
        "total": _ms(end - c.t0),
    }
    if c.direction == "out":
        phases["wait"] = phases["firstByte"]
    record: dict[str, Any] = {
        "sid": new_record_sid(),
        "direction": c.direction,
        "createdAt": iso_time(c.started),
        "request": request,
        "response": response,
        "timings": {"duration": _ms(end - c.t0), "phases": phases},
        "tags": list(c.tags),
    }
    if c.error is not None:
        record["tags"].append({"key": "error", "value": c.error[:4096]})
    if c.endpoint:
        record["endpoint"] = c.endpoint[:2048]
    return record
