"""Delivery against the real stack: an ingest outage within and beyond the queue bound, client
redactions and exclusions that never reach the wire, flush on shutdown (uvicorn's lifespan and
atexit), and outgoing httpx / requests calls."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from typing import Any

import pytest
from fastapi import FastAPI, Request

from tapline import Tapline, TaplineASGIMiddleware

from .support import (
    Account,
    IngestProxy,
    api,
    free_port,
    http,
    ingest_url,
    new_account,
    sdk,
    serve_asgi,
    stored_records,
    wait_for,
    wait_stored,
)

pytestmark = pytest.mark.stack


def users_app(t: Tapline) -> Any:
    app = FastAPI()
    app.add_middleware(TaplineASGIMiddleware, tapline=t)

    @app.get("/users/{user_id}")
    def get_user(user_id: str) -> dict[str, str]:
        return {"id": user_id}

    return app


def outage(proxy: IngestProxy, t: Tapline, total: int) -> tuple[dict[str, Any], list[int]]:
    """Calls `total` times while the proxy is down; returns the SDK's stats then and the call times (ms)."""
    wait_for(lambda: t.stats()["settingsLoaded"], "the SDK settings")
    times: list[int] = []
    with serve_asgi(users_app(t)) as base:
        proxy.stop()
        for i in range(total):
            started = time.perf_counter()
            status, _, _ = http("GET", f"{base}/users/{i}")
            times.append(round((time.perf_counter() - started) * 1000))
            assert status == 200
        # A capture is handed over once its response was sent: the last one may follow the answer.
        wait_for(lambda: t.stats()["captured"] == total, "every capture")
        wait_for(lambda: t.stats()["failures"] >= 2, "failed attempts")
        down = t.stats()
        proxy.start()
        assert t.flush(30)
    return down, times


def test_ingest_down_and_back_within_the_queue_bound_loses_nothing() -> None:
    acct = new_account()
    proxy = IngestProxy(ingest_url())
    proxy.start()
    t = sdk(acct, endpoint=proxy.url, batch_size=20)
    try:
        down, _ = outage(proxy, t, 60)
        assert down["captured"] == 60
        assert down["dropped"] == 0
        assert down["sent"] == 0
        assert down["queuedRecords"] == 60
        records = wait_stored(acct, 60)
        assert len(records) == 60
        assert len({r["sid"] for r in records}) == 60
        ids = sorted(int(r["request"]["path"].split("/")[2]) for r in records)
        assert ids == list(range(60))
        assert all(r["endpoint"] == "/users/{user_id}" for r in records)
        assert t.stats()["sent"] == 60
    finally:
        t.shutdown(5)
        proxy.stop()


def test_ingest_down_beyond_the_queue_bound_drops_the_oldest_and_counts_them() -> None:
    acct = new_account()
    proxy = IngestProxy(ingest_url())
    proxy.start()
    bound = 64 * 1024
    t = sdk(acct, endpoint=proxy.url, batch_size=20, max_queue_bytes=bound)
    try:
        total = 300
        down, times = outage(proxy, t, total)
        # The host keeps answering at its own pace while the ingest is unreachable.
        assert sorted(times)[len(times) // 2] < 100
        assert down["captured"] == total
        assert down["dropped"] > 0
        assert down["queuedBytes"] <= bound
        assert down["queuedRecords"] + down["dropped"] == total
        queued = down["queuedRecords"]
        wait_stored(acct, queued)
        # A moment more: nothing beyond the queued records arrives.
        time.sleep(2)
        records = stored_records(acct)
        assert len(records) == queued
        assert len({r["sid"] for r in records}) == queued
        # The oldest were dropped: what arrived is the newest `queued` calls, each once.
        ids = sorted(int(r["request"]["path"].split("/")[2]) for r in records)
        assert ids == list(range(total - queued, total))
    finally:
        t.shutdown(5)
        proxy.stop()


def test_client_redactions_and_exclusions_never_reach_the_wire() -> None:
    acct = new_account()
    base_path = f"/v1/accounts/{acct.account_sid}"
    for kind, body in [
        (
            "redactions",
            {
                "fieldPath": "$.request.body.password",
                "redactionType": "replace",
                "replacementValue": "[pw]",
                "redactAt": "client",
            },
        ),
        (
            "redactions",
            {"fieldPath": "$.request.headers.authorization", "redactionType": "remove", "redactAt": "client"},
        ),
        (
            "redactions",
            {"fieldPath": "$.request.queryString.apiKey", "redactionType": "mask", "redactAt": "client"},
        ),
        ("redactions", {"fieldPath": "$..token", "redactionType": "hash", "redactAt": "client"}),
        ("exclusions", {"pathPattern": "/health*", "method": "*"}),
    ]:
        status, answer = api(acct, "POST", f"{base_path}/{kind}", {"name": "r", **body})
        assert status == 201, answer

    proxy = IngestProxy(ingest_url())
    proxy.start()
    t = sdk(acct, endpoint=proxy.url)
    app = FastAPI()
    app.add_middleware(TaplineASGIMiddleware, tapline=t)

    @app.post("/login")
    async def login(request: Request) -> dict[str, str]:
        data = await request.json()
        return {"token": "TOKEN-OUT-777", "user": data["user"]}

    @app.get("/healthz")
    def healthz() -> str:
        return "ok"

    try:
        wait_for(lambda: t.stats()["settingsLoaded"] and t.stats()["redactionRules"] == 4, "the client rules")
        with serve_asgi(app) as base:
            status, _, _ = http(
                "POST",
                f"{base}/login?apiKey=KEY123SECRET&page=2",
                json.dumps({"user": "ann", "password": "PASSWORD-SECRET-1"}).encode(),
                {"content-type": "application/json", "authorization": "Bearer SECRET-BEARER-1"},
            )
            assert status == 200
            assert http("GET", f"{base}/healthz")[0] == 200
            assert t.flush(15)
        wire = proxy.wire()
        assert "/login" in wire
        for secret in ["PASSWORD-SECRET-1", "SECRET-BEARER-1", "KEY123SECRET", "TOKEN-OUT-777"]:
            assert secret not in wire
        assert "/healthz" not in wire
        assert t.stats()["excluded"] == 1
        [stored] = wait_stored(acct, 1)
        assert json.loads(stored["request"]["body"]) == {"user": "ann", "password": "[pw]"}
        assert "authorization" not in stored["request"]["headers"]
        assert stored["request"]["queryString"] == {"apiKey": "************", "page": "2"}
        assert "KEY123" not in stored["request"]["url"]
        token = json.loads(stored["response"]["body"])["token"]
        assert len(token) == 64 and all(c in "0123456789abcdef" for c in token)
    finally:
        t.shutdown(5)
        proxy.stop()


def test_shape_a_client_redactions_and_criteria_exclusions_never_reach_the_wire() -> None:
    acct = new_account()
    base_path = f"/v1/accounts/{acct.account_sid}"
    for kind, body in [
        ("redactions", {"type": "email", "level": "full", "scopes": ["*"], "redactAt": "client"}),
        ("redactions", {"type": "card", "level": "partial", "scopes": ["*"], "redactAt": "client"}),
        (
            "redactions",
            {
                "type": "shopToken",
                "pattern": "tok-[A-Za-z0-9]{8}",
                "applyTo": "value",
                "level": "full",
                "scopes": ["request.headers", "request.body"],
                "redactAt": "client",
            },
        ),
        ("exclusions", {"criteria": "path:/internal/* status:204"}),
    ]:
        status, answer = api(acct, "POST", f"{base_path}/{kind}", body)
        assert status == 201, answer

    proxy = IngestProxy(ingest_url())
    proxy.start()
    t = sdk(acct, endpoint=proxy.url)
    app = FastAPI()
    app.add_middleware(TaplineASGIMiddleware, tapline=t)

    @app.post("/pay")
    async def pay(request: Request) -> dict[str, Any]:
        await request.body()
        return {"contact": "reply.secret@example.org", "ok": True}

    @app.post("/internal/ping", status_code=204)
    def ping() -> None:
        return None

    try:
        wait_for(
            lambda: (
                t.stats()["settingsLoaded"]
                and t.stats()["sensitiveRules"] == 3
                and t.stats()["exclusionCriteria"] == 1
            ),
            "the Shape A rules",
        )
        with serve_asgi(app) as base:
            body = json.dumps({"user": {"email": "ann.secret@example.org"}, "card": "4111 1111 1111 1111"})
            status, _, _ = http(
                "POST",
                f"{base}/pay?card=4242424242424242&page=2",
                body.encode(),
                {"content-type": "application/json", "x-shop-token": "tok-Zq81xWv0"},
            )
            assert status == 200
            assert http("POST", f"{base}/internal/ping", b"x")[0] == 204
            assert t.flush(15)
        wire = proxy.wire()
        assert "/pay" in wire
        for secret in [
            "ann.secret",
            "reply.secret",
            "4111 1111 1111 1111",
            "4242424242424242",
            "tok-Zq81xWv0",
            "/internal/",
        ]:
            assert secret not in wire
        assert t.stats()["excluded"] == 1
        [stored] = wait_stored(acct, 1)
        assert stored["request"]["path"] == "/pay"
        assert json.loads(stored["request"]["body"]) == {
            "user": {"email": "[REDACTED:email]"},
            "card": "**** **** **** 1111",
        }
        assert stored["request"]["headers"]["x-shop-token"] == "[REDACTED:shopToken]"
        assert stored["request"]["queryString"] == {"card": "************4242", "page": "2"}
        assert json.loads(stored["response"]["body"]) == {"contact": "[REDACTED:email]", "ok": True}
        assert stored["request"]["size"] == len(body)
    finally:
        t.shutdown(5)
        proxy.stop()


HOST_SCRIPT = textwrap.dedent(
    """
    import os, sys
    from tapline import Tapline, TaplineASGIMiddleware

    # A flush interval longer than the test: only the shutdown flush can send the records. Under
    # uvicorn that is the lifespan's alone (no atexit flush); in the batch job, atexit's.
    t = Tapline(
        os.environ["INGEST"],
        os.environ["BUCKET"],
        os.environ["TOKEN"],
        flush_interval=600,
        flush_at_exit=sys.argv[1] != "uvicorn",
    )
    if sys.argv[1] == "uvicorn":
        import uvicorn
        from fastapi import FastAPI

        app = FastAPI()
        app.add_middleware(TaplineASGIMiddleware, tapline=t)

        @app.get("/orders/{order_id}")
        def order(order_id: int) -> dict[str, int]:
            return {"id": order_id}

        uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning")
    else:
        from flask import Flask
        from tapline.flask import TaplineFlask

        app = Flask("batch")
        TaplineFlask(app, tapline=t)

        @app.get("/jobs/<int:job_id>")
        def job(job_id: int) -> str:
            return "done"

        import time
        while not t.stats()["settingsLoaded"]:
            time.sleep(0.05)
        client = app.test_client()
        for i in range(7):
            response = client.get(f"/jobs/{i}")
            assert response.status_code == 200
            # Closing the response is what a WSGI server does once it was sent: the capture ends.
            response.close()
        print("queued", t.stats()["queuedRecords"], flush=True)
    """
)


def host(acct: Account, mode: str, port: int) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "INGEST": ingest_url(),
        "BUCKET": acct.bucket_sid,
        "TOKEN": acct.ingest_token,
        "PORT": str(port),
    }
    return subprocess.Popen(
        [sys.executable, "-c", HOST_SCRIPT, mode],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_shutdown_flushes_uvicorn_lifespan() -> None:
    acct = new_account()
    port = free_port()
    proc = host(acct, "uvicorn", port)
    try:
        base = f"http://127.0.0.1:{port}"

        def up() -> bool:
            try:
                return http("GET", f"{base}/orders/0")[0] == 200
            except OSError:
                return False

        wait_for(up, "the host app", 30, 0.1)
        for i in range(1, 9):
            assert http("GET", f"{base}/orders/{i}")[0] == 200
        time.sleep(1.5)
        # Nothing was sent before shutdown (the interval is 600 s) ...
        assert stored_records(acct) == []
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0, out
    finally:
        if proc.poll() is None:
            proc.kill()
    # ... and the lifespan shutdown sent all nine.
    records = wait_stored(acct, 9)
    assert len(records) == 9
    assert Counter(r["endpoint"] for r in records) == {"/orders/{order_id}": 9}


def test_shutdown_flushes_at_exit() -> None:
    acct = new_account()
    proc = host(acct, "atexit", 0)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "queued 7" in out
    records = wait_stored(acct, 7)
    assert len(records) == 7
    assert Counter(r["endpoint"] for r in records) == {"/jobs/{job_id}": 7}


def test_outgoing_httpx_and_requests_calls_are_captured() -> None:
    import httpx
    import requests

    acct = new_account()
    t = sdk(acct, capture_outgoing=True)
    upstream = FastAPI()

    @upstream.post("/echo")
    def echo(body: dict[str, str]) -> dict[str, str]:
        return body

    try:
        wait_for(lambda: t.stats()["settingsLoaded"], "the SDK settings")
        with serve_asgi(upstream) as base:
            assert httpx.post(f"{base}/echo?via=httpx", json={"a": "1"}).json() == {"a": "1"}
            assert requests.post(f"{base}/echo?via=requests", json={"b": "2"}, timeout=10).json() == {
                "b": "2"
            }

            async def call() -> Any:
                async with httpx.AsyncClient() as client:
                    return (await client.post(f"{base}/echo?via=async", json={"c": "3"})).json()

            import asyncio

            assert asyncio.run(call()) == {"c": "3"}
            assert t.flush(15)
        records = wait_stored(acct, 3)
        assert len(records) == 3
        by_via = {r["request"]["queryString"]["via"]: r for r in records}
        assert set(by_via) == {"httpx", "requests", "async"}
        for via, body in [("httpx", {"a": "1"}), ("requests", {"b": "2"}), ("async", {"c": "3"})]:
            r = by_via[via]
            assert r["direction"] == "out"
            assert r["request"]["method"] == "POST"
            assert r["request"]["path"] == "/echo"
            assert r["response"]["statusCode"] == 200
            assert json.loads(r["request"]["body"]) == body
            assert json.loads(r["response"]["body"]) == body
    finally:
        t.shutdown(5)
