"""Unit tests without the stack: delivery policy, templates, the queue bound, errors kept from the host."""

from __future__ import annotations

import asyncio
from email.utils import formatdate
from typing import Any

from tapline import Tapline, TaplineASGIMiddleware
from tapline._record import Capture, new_record_sid
from tapline._transport import CircuitBreaker, backoff_s, classify, retry_after_s
from tapline.django import django_template
from tapline.flask import flask_template

# Nothing listens on port 9 (discard) here: the SDK's calls fail at once.
UNREACHABLE = "http://127.0.0.1:9"


def offline(**options: Any) -> Tapline:
    return Tapline(UNREACHABLE, "bkt_test", "tok_test", flush_at_exit=False, **options)


def capture(i: int) -> Capture:
    return Capture(
        direction="in",
        method="GET",
        scheme="http",
        host="api.test",
        path=f"/users/{i}",
        query="",
        started=0.0,
        t0=0.0,
        req_headers=[("accept", "application/json")],
        status=200,
    )


def test_classify_retry_after_backoff() -> None:
    assert classify(202) == "ok"
    for s in (408, 429, 500, 502, 503):
        assert classify(s) == "retry"
    for s in (400, 401, 403, 404, 413):
        assert classify(s) == "drop"
    assert retry_after_s("3") == 3.0
    assert retry_after_s(formatdate(10.0, usegmt=True), now=4.0) == 6.0
    assert retry_after_s("soon") is None
    assert retry_after_s(None) is None
    assert backoff_s(0, 0.5, 30, lambda: 1) == 0.5
    assert backoff_s(3, 0.5, 30, lambda: 1) == 4.0
    assert backoff_s(20, 0.5, 30, lambda: 1) == 30
    assert backoff_s(3, 0.5, 30, lambda: 0) == 0


def test_circuit_opens_half_opens_and_reopens_longer() -> None:
    c = CircuitBreaker(3, 1.0, 8.0)
    assert c.failure(0) is False
    assert c.failure(0) is False
    assert c.failure(0) is True
    assert c.wait_s(0.5) == 0.5
    assert c.wait_s(1.0) == 0
    assert c.state == "half-open"
    assert c.failure(1.0) is True
    assert c.wait_s(1.0) == 2.0
    c.wait_s(3.0)
    c.success()
    state: str = c.state
    assert state == "closed"
    assert c.wait_s(3.0) == 0


def test_templates_of_flask_and_django() -> None:
    assert flask_template("/users/<int:user_id>/files/<path:name>") == "/users/{user_id}/files/{name}"
    assert flask_template("/plain/<slug>") == "/plain/{slug}"
    assert django_template("users/<int:pk>/") == "/users/{pk}/"
    assert django_template("api/items/") == "/api/items/"
    assert django_template(r"^articles/(?P<year>[0-9]{4})/$") == "/articles/{year}/"


def test_sids_are_server_format_and_distinct() -> None:
    sids = {new_record_sid() for _ in range(5000)}
    assert len(sids) == 5000
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
    for s in list(sids)[:100]:
        assert s.startswith("req_") and len(s) == 31 and set(s[4:]) <= alphabet


def test_queue_is_bounded_by_bytes_and_drops_the_oldest() -> None:
    bound = 16 * 1024
    t = offline(max_queue_bytes=bound)
    try:
        for i in range(200):
            t.submit(capture(i))
        s = t.stats()
        assert s["captured"] == 200
        assert s["queuedBytes"] <= bound
        assert s["dropped"] > 0
        assert s["queuedRecords"] + s["dropped"] == 200
        kept = [c.path for c, _ in t._queue]
        assert kept == [f"/users/{i}" for i in range(200 - len(kept), 200)]
        # Unreachable ingest: a flush ends at its timeout with the records still queued.
        assert t.flush(0.3) is False
        assert t.stats()["queuedRecords"] == s["queuedRecords"]
    finally:
        t.shutdown(0)


def test_bad_options_fall_back_to_defaults() -> None:
    t = Tapline(
        "not a url",
        "bkt",
        "tok",
        batch_size=-5,
        max_queue_bytes=float("nan"),  # type: ignore[arg-type]
        environment="Production",
        enabled=False,
    )
    assert t.endpoint == "http://127.0.0.1:8081"
    assert t.batch_size == 1
    assert t.max_queue_bytes == 16 * 1024 * 1024
    assert t.environment is None
    assert {"key": "environment", "value": "Production"} in t.tags
    assert t.active is False


def test_sdk_errors_never_reach_the_host() -> None:
    t = offline()

    def broken(_c: Capture) -> None:
        raise RuntimeError("broken inside the SDK")

    t.submit = broken  # type: ignore[method-assign, assignment]
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]}
        )
        await send({"type": "http.response.body", "body": b"fine"})

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/x", "headers": [], "query_string": b""}
    asyncio.run(TaplineASGIMiddleware(app, tapline=t)(scope, receive, send))
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[1]["body"] == b"fine"
    assert t.stats()["internalErrors"] == 1
    t.shutdown(0)
