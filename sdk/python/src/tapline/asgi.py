"""ASGI middleware: FastAPI, Starlette and any other ASGI application.

The route template is the matched route's path (``scope["route"].path``, set by Starlette's and
FastAPI's routers), prefixed by the path of the mounts it was reached through. Request and response
bodies are seen through the ``receive`` and ``send`` callables of the one request (nothing global
is patched). On ``lifespan.shutdown`` the queue is flushed before the server is told shutdown is
complete.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ._core import Tapline
from ._record import Capture

# Permissive, as Starlette's own middleware factory types are: any ASGI framework's app fits.
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]
ASGIApp = Callable[[Any, Receive, Send], Awaitable[None]]


def starlette_template(scope: Scope, root_path: str) -> str | None:
    """The matched route's path with the mounts' prefix (``/api/users/{user_id}``), or None."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    if not isinstance(path, str):
        return None
    prefix = str(scope.get("root_path", ""))[len(root_path) :]
    return (prefix + path) or "/"


class _Body:
    """Body bytes up to a limit; every byte is counted."""

    __slots__ = ("chunks", "kept", "limit", "total")

    def __init__(self, limit: int) -> None:
        self.chunks: list[bytes] = []
        self.kept = 0
        self.total = 0
        self.limit = limit

    def add(self, b: bytes) -> None:
        n = len(b)
        self.total += n
        if self.kept < self.limit and n:
            piece = b if self.kept + n <= self.limit else b[: self.limit - self.kept]
            self.chunks.append(piece)
            self.kept += len(piece)

    def data(self) -> bytes | None:
        return b"".join(self.chunks) if self.chunks else None


class TaplineASGIMiddleware:
    """The ASGI middleware.

    ``app = TaplineASGIMiddleware(app, tapline=Tapline(...))``, or with Starlette and FastAPI
    ``app.add_middleware(TaplineASGIMiddleware, tapline=...)``.
    """

    def __init__(self, app: ASGIApp, tapline: Tapline) -> None:
        self.app = app
        self.tapline = tapline

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind == "lifespan":
            await self.app(scope, receive, self._lifespan_send(send))
            return
        tap = self.tapline
        if kind != "http" or not tap.active:
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        started = time.time()
        req = _Body(tap.body_limit("request"))
        res = _Body(tap.body_limit("response"))
        state: dict[str, Any] = {"status": None, "headers": [], "first": None, "t1": 0.0}
        root_path = str(scope.get("root_path", ""))

        async def tap_receive() -> Any:
            message: Message = await receive()
            if message.get("type") == "http.request":
                try:
                    req.add(message.get("body", b""))
                except Exception as err:  # noqa: BLE001 - never into the host
                    tap.internal_error(err)
            return message

        async def tap_send(message: Message) -> None:
            try:
                t = message.get("type")
                if t == "http.response.start":
                    state["status"] = message.get("status")
                    state["headers"] = list(message.get("headers", []))
                elif t == "http.response.body":
                    if state["first"] is None:
                        state["first"] = time.perf_counter()
                    res.add(message.get("body", b""))
                    if not message.get("more_body", False):
                        state["t1"] = time.perf_counter()
            except Exception as err:  # noqa: BLE001 - never into the host
                tap.internal_error(err)
            await send(message)

        try:
            await self.app(scope, tap_receive, tap_send)
        except BaseException:
            if state["status"] is None:
                # The server answers 500 for an application that raised before responding.
                state["status"] = 500
            raise
        finally:
            tap.guard(lambda: self._finish(scope, root_path, t0, started, req, res, state), None)

    def _finish(
        self,
        scope: Scope,
        root_path: str,
        t0: float,
        started: float,
        req: _Body,
        res: _Body,
        state: dict[str, Any],
    ) -> None:
        tap = self.tapline
        method = str(scope.get("method", "GET"))
        raw = scope.get("raw_path")
        path = raw.decode("latin-1") if isinstance(raw, bytes) else str(scope.get("path", "/"))
        path = path.split("?", 1)[0]
        template = starlette_template(scope, root_path)
        status = state["status"]
        if not tap.should_capture(method, path, template, status):
            return
        headers = scope.get("headers", [])
        host = None
        req_len = None
        res_len = None
        for k, v in headers:
            if k == b"host":
                host = v.decode("latin-1")
            elif k == b"content-length":
                req_len = v
        for k, v in state["headers"]:
            if k.lower() == b"content-length":
                res_len = v
        client = scope.get("client")
        server = scope.get("server")
        t1 = state["t1"] or time.perf_counter()
        tap.submit(
            Capture(
                direction="in",
                method=method,
                scheme=str(scope.get("scheme", "http")),
                host=host,
                path=path,
                query=bytes(scope.get("query_string", b"")).decode("latin-1"),
                started=started,
                t0=t0,
                req_headers=list(headers),
                server_port=server[1] if server and len(server) > 1 else None,
                ip=client[0] if client else None,
                endpoint=template,
                req_body=req.data(),
                req_size=_size(req_len, req.total),
                status=status,
                res_headers=state["headers"],
                res_body=res.data(),
                res_size=_size(res_len, res.total),
                t1=t1,
                first_byte=state["first"],
            )
        )

    def _lifespan_send(self, send: Send) -> Send:
        tap = self.tapline

        async def lifespan_send(message: Message) -> None:
            if message.get("type") in ("lifespan.shutdown.complete", "lifespan.shutdown.failed"):
                # The app's own shutdown handlers have run: the queue is flushed before the server exits.
                try:
                    import asyncio

                    await asyncio.get_running_loop().run_in_executor(None, tap.shutdown)
                except Exception as err:  # noqa: BLE001 - never into the host
                    tap.internal_error(err)
            await send(message)

        return lifespan_send


def _size(header: bytes | None, seen: int) -> int:
    if header is not None:
        try:
            n = int(header)
            if n >= 0:
                return n
        except ValueError:
            pass
    return seen
