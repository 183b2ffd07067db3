"""Capture of outgoing calls made with ``httpx`` (sync and async clients) and ``requests``.

Enabled with ``Tapline(capture_outgoing=True)`` (and the bucket's ``interceptOutbound``): the
clients' ``send`` methods are wrapped once per process, and each call the wrapper sees becomes an
``out`` record. Bodies given as bytes or text are captured (streamed request bodies are not); a
response body is captured when the client has read it (not for ``stream=True`` calls that the
application reads later). Calls carrying the ``x-tapline-sdk`` header are never captured.
"""

from __future__ import annotations

import functools
import time
from typing import Any
from urllib.parse import urlsplit

from ._core import Tapline
from ._record import Capture
from ._transport import SDK_HEADER

#: the Tapline instance outgoing calls are reported to (the last one that asked)
_target: list[Tapline] = []


def _current() -> Tapline | None:
    tap = _target[-1] if _target else None
    return tap if tap is not None and tap.outgoing_enabled else None


def _bytes(v: object, limit: int) -> bytes | None:
    if limit <= 0:
        return None
    if isinstance(v, str):
        v = v.encode("utf-8")
    if isinstance(v, (bytes, bytearray)) and v:
        return bytes(v[:limit])
    return None


def _size_of(v: object) -> int:
    if isinstance(v, str):
        return len(v.encode("utf-8"))
    if isinstance(v, (bytes, bytearray)):
        return len(v)
    return 0


def _capture(
    tap: Tapline,
    method: str,
    url: str,
    req_headers: list[tuple[str, str]],
    req_content: object,
    started: float,
    t0: float,
    status: int | None,
    res_headers: list[tuple[str, str]],
    res_content: object,
    error: str | None,
) -> None:
    parts = urlsplit(url)
    path = parts.path or "/"
    if not tap.should_capture(method, path, None, status):
        return
    t1 = time.perf_counter()
    tap.submit(
        Capture(
            direction="out",
            method=method,
            scheme=parts.scheme or "http",
            host=parts.netloc or None,
            path=path,
            query=parts.query,
            started=started,
            t0=t0,
            req_headers=req_headers,
            req_body=_bytes(req_content, tap.body_limit("request")),
            req_size=_size_of(req_content),
            status=status,
            res_headers=res_headers,
            res_body=_bytes(res_content, tap.body_limit("response")),
            res_size=_size_of(res_content),
            t1=t1,
            first_byte=t1,
            error=error,
        )
    )


def instrument_httpx(tap: Tapline) -> bool:
    """Wraps ``httpx.Client.send`` and ``httpx.AsyncClient.send``; False when httpx is not installed."""
    try:
        import httpx
    except ImportError:
        return False
    _target.append(tap)
    if getattr(httpx.Client.send, "__tapline__", False):
        return True

    def info(request: Any) -> tuple[str, str, list[tuple[str, str]], object]:
        try:
            content: object = request.content
        except Exception:  # noqa: BLE001 - a streamed body is not read here
            content = None
        return request.method, str(request.url), list(request.headers.multi_items()), content

    def res_info(response: Any) -> tuple[int, list[tuple[str, str]], object]:
        try:
            content: object = response.content
        except Exception:  # noqa: BLE001 - not read yet (stream=True)
            content = None
        return response.status_code, list(response.headers.multi_items()), content

    original = httpx.Client.send
    original_async = httpx.AsyncClient.send

    @functools.wraps(original)
    def send(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        tap = _current()
        if tap is None or SDK_HEADER in request.headers:
            return original(self, request, *args, **kwargs)
        t0, started = time.perf_counter(), time.time()
        try:
            response = original(self, request, *args, **kwargs)
        except Exception as err:
            error = repr(err)
            tap.guard(lambda: _capture(tap, *info(request), started, t0, None, [], None, error), None)
            raise
        tap.guard(lambda: _capture(tap, *info(request), started, t0, *res_info(response), None), None)
        return response

    @functools.wraps(original_async)
    async def async_send(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        tap = _current()
        if tap is None or SDK_HEADER in request.headers:
            return await original_async(self, request, *args, **kwargs)
        t0, started = time.perf_counter(), time.time()
        try:
            response = await original_async(self, request, *args, **kwargs)
        except Exception as err:
            error = repr(err)
            tap.guard(lambda: _capture(tap, *info(request), started, t0, None, [], None, error), None)
            raise
        tap.guard(lambda: _capture(tap, *info(request), started, t0, *res_info(response), None), None)
        return response

    send.__tapline__ = True  # type: ignore[attr-defined]
    async_send.__tapline__ = True  # type: ignore[attr-defined]
    httpx.Client.send = send  # type: ignore[method-assign]
    httpx.AsyncClient.send = async_send  # type: ignore[method-assign]
    return True


def instrument_requests(tap: Tapline) -> bool:
    """Wraps ``requests.Session.send``; False when requests is not installed."""
    try:
        import requests
    except ImportError:
        return False
    _target.append(tap)
    if getattr(requests.Session.send, "__tapline__", False):
        return True
    original = requests.Session.send

    def info(request: Any) -> tuple[str, str, list[tuple[str, str]], object]:
        return (
            str(request.method),
            str(request.url),
            [(k, str(v)) for k, v in request.headers.items()],
            request.body,
        )

    def res_info(response: Any) -> tuple[int, list[tuple[str, str]], object]:
        # `_content` is False until the body was read: a stream=True body is left to the application.
        content = getattr(response, "_content", False)
        return response.status_code, [(k, str(v)) for k, v in response.headers.items()], content or None

    @functools.wraps(original)
    def send(self: Any, request: Any, **kwargs: Any) -> Any:
        tap = _current()
        if tap is None or SDK_HEADER in request.headers:
            return original(self, request, **kwargs)
        t0, started = time.perf_counter(), time.time()
        try:
            response = original(self, request, **kwargs)
        except Exception as err:
            error = repr(err)
            tap.guard(lambda: _capture(tap, *info(request), started, t0, None, [], None, error), None)
            raise
        tap.guard(lambda: _capture(tap, *info(request), started, t0, *res_info(response), None), None)
        return response

    send.__tapline__ = True  # type: ignore[attr-defined]
    requests.Session.send = send  # type: ignore[method-assign]
    return True
