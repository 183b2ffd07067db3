"""WSGI middleware: Flask, Django and any other WSGI application.

The request body is seen through a reader around ``wsgi.input`` (only what the application reads),
the response through ``start_response`` and the iterable it returns; the record is handed over when
the server closes that iterable, i.e. after the response was sent. The route template is
``environ["tapline.endpoint"]`` when a framework hook sets it (the Flask extension and the Django
middleware do); without one the processor derives the template from the path.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ._core import Tapline
from ._record import Capture
from .asgi import _Body

StartResponse = Callable[..., Callable[[bytes], object]]
WSGIApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]

#: environ key an adapter sets to the route template of the request
ENDPOINT_KEY = "tapline.endpoint"
#: environ key marking a request another Tapline adapter already captures
CAPTURED_KEY = "tapline.captured"


class _Input:
    """``wsgi.input`` with what the application reads kept up to a limit."""

    def __init__(self, stream: Any, body: _Body) -> None:
        self._stream = stream
        self._body = body

    def read(self, *args: Any) -> bytes:
        data: bytes = self._stream.read(*args)
        self._body.add(data)
        return data

    def readinto(self, b: Any) -> int | None:
        # Werkzeug (Flask) reads the body this way; a stream without readinto is read instead.
        view = memoryview(b).cast("B")
        if hasattr(self._stream, "readinto"):
            n: int | None = self._stream.readinto(view)
        else:
            data: bytes = self._stream.read(len(view))
            n = len(data)
            view[:n] = data
        if n:
            self._body.add(bytes(view[:n]))
        return n

    def readline(self, *args: Any) -> bytes:
        data: bytes = self._stream.readline(*args)
        self._body.add(data)
        return data

    def readlines(self, *args: Any) -> list[bytes]:
        lines: list[bytes] = self._stream.readlines(*args)
        for line in lines:
            self._body.add(line)
        return lines

    def __iter__(self) -> Iterator[bytes]:
        for line in self._stream:
            self._body.add(line)
            yield line

    def __getattr__(self, name: str) -> Any:
        # Anything else (close, fileno, ...) is the stream's own.
        return getattr(self._stream, name)


def environ_headers(environ: dict[str, Any]) -> list[tuple[str, str]]:
    """The request headers of a WSGI environ (``HTTP_X_API_KEY`` -> ``x-api-key``)."""
    out: list[tuple[str, str]] = []
    for k, v in environ.items():
        if k.startswith("HTTP_"):
            out.append((k[5:].replace("_", "-").lower(), str(v)))
        elif k in ("CONTENT_TYPE", "CONTENT_LENGTH") and v:
            out.append((k.replace("_", "-").lower(), str(v)))
    return out


class _Result:
    """The application's response iterable, passed through; the capture ends in ``close``."""

    def __init__(
        self, inner: Iterable[bytes], on_chunk: Callable[[bytes], None], on_close: Callable[[], None]
    ):
        self._inner = inner
        self._it = iter(inner)
        self._on_chunk = on_chunk
        self._on_close = on_close

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        chunk = next(self._it)
        self._on_chunk(chunk)
        return chunk

    def close(self) -> None:
        try:
            close = getattr(self._inner, "close", None)
            if close is not None:
                close()
        finally:
            self._on_close()


class TaplineWSGIMiddleware:
    """``app.wsgi_app = TaplineWSGIMiddleware(app.wsgi_app, tapline=Tapline(...))``."""

    def __init__(self, app: WSGIApp, tapline: Tapline) -> None:
        self.app = app
        self.tapline = tapline

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        tap = self.tapline
        if not tap.active or environ.get(CAPTURED_KEY):
            return self.app(environ, start_response)
        environ[CAPTURED_KEY] = True
        t0 = time.perf_counter()
        started = time.time()
        req = _Body(tap.body_limit("request"))
        res = _Body(tap.body_limit("response"))
        state: dict[str, Any] = {"status": None, "headers": [], "first": None}
        try:
            environ["wsgi.input"] = _Input(environ["wsgi.input"], req)
        except Exception as err:  # noqa: BLE001 - never into the host
            tap.internal_error(err)

        def tap_start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            try:
                state["status"] = int(status.split(" ", 1)[0])
                state["headers"] = list(headers)
            except Exception as err:  # noqa: BLE001 - never into the host
                tap.internal_error(err)
            return start_response(status, headers, exc_info) if exc_info else start_response(status, headers)

        def on_chunk(chunk: bytes) -> None:
            try:
                if state["first"] is None:
                    state["first"] = time.perf_counter()
                res.add(chunk)
            except Exception as err:  # noqa: BLE001 - never into the host
                tap.internal_error(err)

        def on_close() -> None:
            tap.guard(lambda: self._finish(environ, t0, started, req, res, state), None)

        try:
            inner = self.app(environ, tap_start_response)
        except BaseException:
            if state["status"] is None:
                state["status"] = 500
            on_close()
            raise
        return _Result(inner, on_chunk, on_close)

    def _finish(
        self,
        environ: dict[str, Any],
        t0: float,
        started: float,
        req: _Body,
        res: _Body,
        state: dict[str, Any],
    ) -> None:
        tap = self.tapline
        t1 = time.perf_counter()
        method = str(environ.get("REQUEST_METHOD", "GET"))
        path = _wsgi_path(environ)
        template = environ.get(ENDPOINT_KEY)
        template = template if isinstance(template, str) and template else None
        status = state["status"]
        if not tap.should_capture(method, path, template, status):
            return
        headers = environ_headers(environ)
        host = environ.get("HTTP_HOST") or environ.get("SERVER_NAME")
        port = environ.get("SERVER_PORT")
        res_len = next((v for k, v in state["headers"] if k.lower() == "content-length"), None)
        tap.submit(
            Capture(
                direction="in",
                method=method,
                scheme=str(environ.get("wsgi.url_scheme", "http")),
                host=str(host) if host else None,
                path=path,
                query=str(environ.get("QUERY_STRING", "")),
                started=started,
                t0=t0,
                req_headers=headers,
                server_port=int(port) if isinstance(port, str) and port.isdigit() else None,
                ip=environ.get("REMOTE_ADDR"),
                endpoint=template,
                req_body=req.data(),
                req_size=_int(environ.get("CONTENT_LENGTH"), req.total),
                status=status,
                res_headers=state["headers"],
                res_body=res.data(),
                res_size=_int(res_len, res.total),
                t1=t1,
                first_byte=state["first"],
            )
        )


def _wsgi_path(environ: dict[str, Any]) -> str:
    """The path as sent: the server's raw URI when it gives one (gunicorn, Werkzeug), else
    SCRIPT_NAME + PATH_INFO (PEP 3333 carries them as latin-1 decoded bytes)."""
    uri = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if isinstance(uri, str) and uri.startswith("/"):
        return uri.split("?", 1)[0]
    raw = str(environ.get("SCRIPT_NAME", "")) + str(environ.get("PATH_INFO", "")) or "/"
    try:
        return raw.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return raw


def _int(v: str | None, seen: int) -> int:
    if isinstance(v, str) and v.strip().isdigit():
        return int(v)
    return seen
