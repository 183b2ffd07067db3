"""Helpers of the tests against the real stack: accounts handed over by the test runner, real
HTTP servers for the apps, the requests API, and a local proxy in front of the ingest listener."""

from __future__ import annotations

import gzip
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from tapline import Tapline


@dataclass
class Account:
    account_sid: str
    bucket_sid: str
    api_token: str
    ingest_token: str


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(
            f"{name} is not set: the stack tests run from test/integration/sdk-python.test.ts "
            "(npx vitest run test/integration/sdk-python.test.ts), which starts the stack and sets it"
        )
    return value


def api_url() -> str:
    return env("TAPLINE_TEST_API_URL")


def ingest_url() -> str:
    return env("TAPLINE_TEST_INGEST_URL")


_accounts: list[Account] = []
_accounts_lock = threading.Lock()


def new_account() -> Account:
    """A fresh account (with its bucket and tokens) made for this run by the test runner; one per test."""
    with _accounts_lock:
        if not _accounts:
            for a in json.loads(env("TAPLINE_TEST_ACCOUNTS")):
                _accounts.append(Account(a["accountSid"], a["bucketSid"], a["apiToken"], a["ingestToken"]))
            # Marks the pool as read: an empty pool afterwards means more tests than accounts.
            _accounts.append(Account("", "", "", ""))
        acct = _accounts.pop(0)
        if not acct.account_sid:
            raise RuntimeError("TAPLINE_TEST_ACCOUNTS has fewer accounts than the tests need")
        return acct


def sdk(acct: Account, **options: Any) -> Tapline:
    """A Tapline client of the account's bucket with short intervals, for tests."""
    base: dict[str, Any] = {
        "flush_interval": 0.2,
        "retry_base": 0.05,
        "retry_max": 0.5,
        "circuit_open": 0.3,
        "circuit_max_open": 1.0,
        "flush_at_exit": False,
    }
    base.update(options)
    endpoint = base.pop("endpoint", ingest_url())
    return Tapline(endpoint, acct.bucket_sid, acct.ingest_token, **base)


def wait_for(check: Callable[[], Any], what: str, timeout: float = 30.0, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def http(
    method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One HTTP call with the standard library (not captured by the SDK's outgoing capture)."""
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as res:
            return res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


def api(acct: Account, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"authorization": f"Bearer {acct.api_token}"}
    if data is not None:
        headers["content-type"] = "application/json"
    status, _, raw = http(method, api_url() + path, data, headers)
    return status, json.loads(raw) if raw else None


def stored_records(acct: Account) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for page in range(1, 50):
        status, body = api(
            acct,
            "GET",
            f"/v1/accounts/{acct.account_sid}/buckets/{acct.bucket_sid}/requests?limit=100&page={page}",
        )
        assert status == 200, body
        out.extend(body["records"])
        if not body["hasMore"]:
            break
    return out


def wait_stored(acct: Account, n: int, timeout: float = 40.0) -> list[dict[str, Any]]:
    """The account's stored records once there are at least ``n``."""
    return list(
        wait_for(
            lambda: (lambda r: r if len(r) >= n else None)(stored_records(acct)),
            f"{n} stored records",
            timeout,
            0.3,
        )
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve_asgi(app: Any) -> Iterator[str]:
    """The ASGI app under a real uvicorn server on a free port; its base URL."""
    import uvicorn

    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, "uvicorn to start", 20, 0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(20)


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class _ThreadingWSGIServer(WSGIServer):
    daemon_threads = True


@contextmanager
def serve_wsgi(app: Any) -> Iterator[str]:
    """The WSGI app under the standard library's WSGI server on a free port; its base URL."""
    server = make_server("127.0.0.1", 0, app, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler)
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


class IngestProxy:
    """An HTTP proxy in front of the ingest listener on a fixed port: records every body it
    forwards (gunzipped) and can be stopped and started again on the same port."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.bodies: list[str] = []
        self.forwarded = 0
        self.port = free_port()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._sockets: set[socket.socket] = set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                proxy._sockets.add(self.connection)

            def _forward(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                if raw:
                    gz = self.headers.get("content-encoding") == "gzip"
                    proxy.bodies.append((gzip.decompress(raw) if gz else raw).decode("utf-8"))
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in ("host", "connection", "content-length")
                }
                status, res_headers, body = http(self.command, proxy.target + self.path, raw or None, headers)
                proxy.forwarded += 1
                self.send_response(status)
                ct = res_headers.get("content-type")
                if ct:
                    self.send_header("content-type", ct)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = _forward
            do_POST = _forward

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        server = self._server
        self._server = None
        if server is not None:
            server.shutdown()
            server.server_close()
        # Keep-alive connections end too: a stopped proxy answers nothing.
        for s in list(self._sockets):
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass
        self._sockets.clear()
        if self._thread is not None:
            self._thread.join(10)

    def wire(self) -> str:
        return "\n".join(self.bodies)
