"""Django middleware: add ``"tapline.django.TaplineMiddleware"`` first in ``MIDDLEWARE``.

Options are ``settings.TAPLINE`` (Tapline's keyword arguments); one Tapline instance serves the
process. The route template is the resolved URL pattern (``users/<int:pk>/`` -> ``/users/{pk}/``,
a ``re_path`` pattern with its named groups as ``{name}``). The request body is taken from
``request.body`` when the view read it, or read first when its content type is captured and its
``Content-Length`` is within the body limit; the response body from ``response.content``
(streaming responses: size from ``Content-Length``, no body).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

from ._core import Tapline
from ._record import Capture, body_allowed
from .wsgi import CAPTURED_KEY, ENDPOINT_KEY

_CONVERTER = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")
_GROUP = re.compile(r"\(\?P<([^>]+)>[^)]*\)")

_instance: Tapline | None = None
_instance_lock = threading.Lock()


def django_template(route: str) -> str:
    """A Django URL pattern as a template: converters and named groups as ``{name}``, a leading ``/``."""
    if route.startswith("^"):
        t = _GROUP.sub(r"{\1}", route[1:]).rstrip("$").replace("\\", "")
    else:
        t = _CONVERTER.sub(r"{\1}", route)
    return t if t.startswith("/") else "/" + t


def configured() -> Tapline:
    """The process's Tapline: ``settings.TAPLINE`` when it is one, else made from it (a dict) on first use."""
    global _instance
    from django.conf import settings

    given = settings.TAPLINE
    if isinstance(given, Tapline):
        return given
    with _instance_lock:
        if _instance is None:
            _instance = Tapline(**given)
        return _instance


class TaplineMiddleware:
    """Captures every request that passes through the middleware chain."""

    sync_capable = True
    async_capable = False

    def __init__(self, get_response: Callable[[Any], Any], tapline: Tapline | None = None) -> None:
        self.get_response = get_response
        self.tapline = tapline if tapline is not None else configured()

    def __call__(self, request: Any) -> Any:
        tap = self.tapline
        if not tap.active:
            return self.get_response(request)
        if request.META.get(CAPTURED_KEY):
            # The WSGI middleware around the project captures the request: it gets the template.
            response = self.get_response(request)
            tap.guard(lambda: self._hand_template(request), None)
            return response
        t0 = time.perf_counter()
        started = time.time()
        request.META[CAPTURED_KEY] = True
        tap.guard(lambda: self._read_body(request), None)
        response = None
        try:
            response = self.get_response(request)
            return response
        finally:
            tap.guard(lambda: self._finish(request, response, t0, started), None)

    def _hand_template(self, request: Any) -> None:
        route = getattr(getattr(request, "resolver_match", None), "route", None)
        if isinstance(route, str) and route:
            request.META[ENDPOINT_KEY] = django_template(route)

    def _read_body(self, request: Any) -> None:
        limit = self.tapline.body_limit("request")
        length = request.META.get("CONTENT_LENGTH")
        ct = request.META.get("CONTENT_TYPE")
        if (
            limit > 0
            and isinstance(length, str)
            and length.isdigit()
            and 0 < int(length) <= limit
            and body_allowed(ct, self.tapline.body_content_types)
        ):
            # Django keeps what it read: the view reads the same bytes (request.body, .POST, .read()).
            request.body  # noqa: B018 - reading it caches it on the request

    def _finish(self, request: Any, response: Any, t0: float, started: float) -> None:
        tap = self.tapline
        t1 = time.perf_counter()
        method = str(request.method or "GET")
        path = str(request.path)
        match = getattr(request, "resolver_match", None)
        route = getattr(match, "route", None)
        template = django_template(route) if isinstance(route, str) and route else None
        status = int(response.status_code) if response is not None else 500
        if not tap.should_capture(method, path, template, status):
            return
        meta = request.META
        headers = [(k.lower(), str(v)) for k, v in request.headers.items()]
        req_limit = tap.body_limit("request")
        body = getattr(request, "_body", None)
        req_body = body[:req_limit] if isinstance(body, bytes) and req_limit > 0 else None
        length = meta.get("CONTENT_LENGTH")
        req_size = int(length) if isinstance(length, str) and length.isdigit() else len(body or b"")
        res_headers: list[tuple[str, str]] = []
        res_body = None
        res_size = 0
        if response is not None:
            res_headers = [(k, str(v)) for k, v in response.items()]
            for c in getattr(response, "cookies", {}).values():
                res_headers.append(("set-cookie", c.output(header="").strip()))
            if not getattr(response, "streaming", False):
                content = response.content
                res_size = len(content)
                res_limit = tap.body_limit("response")
                res_body = content[:res_limit] if res_limit > 0 else None
            else:
                cl = response.get("Content-Length")
                res_size = int(cl) if isinstance(cl, str) and cl.isdigit() else 0
        port = meta.get("SERVER_PORT")
        tap.submit(
            Capture(
                direction="in",
                method=method,
                scheme=request.scheme or "http",
                host=meta.get("HTTP_HOST") or meta.get("SERVER_NAME"),
                path=path,
                query=str(meta.get("QUERY_STRING", "")),
                started=started,
                t0=t0,
                req_headers=headers,
                server_port=int(port) if isinstance(port, str) and port.isdigit() else None,
                ip=meta.get("REMOTE_ADDR"),
                endpoint=template,
                req_body=req_body,
                req_size=req_size,
                status=status,
                res_headers=res_headers,
                res_body=res_body,
                res_size=res_size,
                t1=t1,
                first_byte=t1,
            )
        )
