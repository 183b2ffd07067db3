"""FastAPI (uvicorn), Flask and Django apps driven over real HTTP against the real stack: every
call is stored once, with the framework's route template as its endpoint."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from fastapi import APIRouter, FastAPI, HTTPException
from pydantic import BaseModel

from tapline import Tapline, TaplineASGIMiddleware
from tapline.flask import TaplineFlask

from .support import http, new_account, sdk, serve_asgi, serve_wsgi, wait_for, wait_stored

pytestmark = pytest.mark.stack


def settled(t: Tapline) -> None:
    wait_for(lambda: t.stats()["settingsLoaded"], "the SDK settings")


def by_path(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["request"]["path"] + "?" + json.dumps(r["request"]["queryString"]): r for r in records}


def assert_once(records: list[dict[str, Any]], n: int) -> None:
    assert len(records) == n
    assert len({r["sid"] for r in records}) == n


class Item(BaseModel):
    name: str


def test_fastapi_every_call_stored_once_with_route_templates() -> None:
    acct = new_account()
    t = sdk(acct)
    app = FastAPI()
    app.add_middleware(TaplineASGIMiddleware, tapline=t)
    router = APIRouter(prefix="/api")

    @router.get("/users/{user_id}")
    def get_user(user_id: int) -> dict[str, int]:
        if user_id == 404:
            raise HTTPException(status_code=404, detail="no such user")
        return {"id": user_id}

    @router.post("/items", status_code=201)
    def create_item(item: Item) -> dict[str, str]:
        return {"created": item.name}

    app.include_router(router)
    settled(t)
    with serve_asgi(app) as base:
        for i in range(20):
            status, _, _ = http("GET", f"{base}/api/users/{i}?page={i}")
            assert status == 200
        status, _, _ = http("GET", f"{base}/api/users/404")
        assert status == 404
        status, _, body = http(
            "POST", f"{base}/api/items", b'{"name":"widget"}', {"content-type": "application/json"}
        )
        assert (status, json.loads(body)) == (201, {"created": "widget"})
        status, _, _ = http("GET", f"{base}/nowhere/7")
        assert status == 404
        assert t.flush(15)
    records = wait_stored(acct, 23)
    assert_once(records, 23)
    assert t.stats()["sent"] == 23
    endpoints = Counter(r["endpoint"] for r in records)
    assert endpoints["/api/users/{user_id}"] == 21
    assert endpoints["/api/items"] == 1
    # No route: the processor derives the template from the path.
    assert endpoints["/nowhere/{id}"] == 1
    post = next(r for r in records if r["request"]["method"] == "POST")
    assert post["direction"] == "in"
    assert post["response"]["statusCode"] == 201
    assert json.loads(post["request"]["body"]) == {"name": "widget"}
    assert json.loads(post["response"]["body"]) == {"created": "widget"}
    assert post["request"]["size"] == len(b'{"name":"widget"}')
    u3 = next(r for r in records if r["request"]["path"] == "/api/users/3")
    assert u3["request"]["queryString"] == {"page": "3"}
    assert u3["request"]["url"].endswith("/api/users/3?page=3")
    assert u3["response"]["headers"]["content-type"] == "application/json"
    assert u3["timings"]["duration"] > 0
    assert {"key": "sdk", "value": "tapline-python/0.1.0"} in u3["tags"]
    assert (
        next(r for r in records if r["request"]["path"] == "/api/users/404")["response"]["statusCode"] == 404
    )
    t.shutdown(5)


def test_flask_every_call_stored_once_with_route_templates() -> None:
    from flask import Blueprint, Flask, jsonify, request

    acct = new_account()
    t = sdk(acct)
    app = Flask("flask_test")
    bp = Blueprint("v1", "flask_test", url_prefix="/v1")

    @bp.get("/users/<int:user_id>")
    def get_user(user_id: int) -> Any:
        return jsonify(id=user_id)

    @bp.post("/items")
    def create_item() -> Any:
        data = request.get_json()
        return jsonify(created=data["name"]), 201

    @app.get("/plain/<slug>")
    def plain(slug: str) -> str:
        return f"hello {slug}"

    app.register_blueprint(bp)
    TaplineFlask(app, tapline=t)
    settled(t)
    with serve_wsgi(app) as base:
        for i in range(15):
            assert http("GET", f"{base}/v1/users/{i}")[0] == 200
        status, _, body = http(
            "POST", f"{base}/v1/items", b'{"name":"gear"}', {"content-type": "application/json"}
        )
        assert (status, json.loads(body)) == (201, {"created": "gear"})
        assert http("GET", f"{base}/plain/abc")[0] == 200
        assert http("GET", f"{base}/missing")[0] == 404
        assert t.flush(15)
    records = wait_stored(acct, 18)
    assert_once(records, 18)
    endpoints = Counter(r["endpoint"] for r in records)
    assert endpoints["/v1/users/{user_id}"] == 15
    assert endpoints["/v1/items"] == 1
    assert endpoints["/plain/{slug}"] == 1
    assert endpoints["/missing"] == 1
    post = next(r for r in records if r["request"]["method"] == "POST")
    assert json.loads(post["request"]["body"]) == {"name": "gear"}
    assert json.loads(post["response"]["body"]) == {"created": "gear"}
    plain_rec = next(r for r in records if r["request"]["path"] == "/plain/abc")
    assert plain_rec["response"]["body"] == "hello abc"
    assert plain_rec["response"]["statusCode"] == 200
    t.shutdown(5)


def test_django_every_call_stored_once_with_route_templates() -> None:
    import django
    from django.conf import settings
    from django.core.wsgi import get_wsgi_application

    acct = new_account()
    t = sdk(acct)
    if not settings.configured:
        settings.configure(
            DEBUG=False,
            ALLOWED_HOSTS=["*"],
            SECRET_KEY="tapline-tests",
            ROOT_URLCONF="tests.django_app",
            MIDDLEWARE=["tapline.django.TaplineMiddleware"],
            INSTALLED_APPS=[],
            TAPLINE=t,
        )
        django.setup()
    else:
        settings.TAPLINE = t
    app = get_wsgi_application()
    settled(t)
    with serve_wsgi(app) as base:
        for i in range(12):
            assert http("GET", f"{base}/users/{i}/?x={i}")[0] == 200
        status, _, body = http(
            "POST", f"{base}/api/items/", b'{"name":"bolt"}', {"content-type": "application/json"}
        )
        assert (status, json.loads(body)) == (201, {"created": "bolt"})
        assert http("GET", f"{base}/articles/2024/")[0] == 200
        assert http("GET", f"{base}/nothing/here/")[0] == 404
        assert t.flush(15)
    records = wait_stored(acct, 15)
    assert_once(records, 15)
    endpoints = Counter(r["endpoint"] for r in records)
    assert endpoints["/users/{pk}/"] == 12
    assert endpoints["/api/items/"] == 1
    assert endpoints["/articles/{year}/"] == 1
    assert endpoints["/nothing/here/"] == 1
    post = next(r for r in records if r["request"]["method"] == "POST")
    assert json.loads(post["request"]["body"]) == {"name": "bolt"}
    assert json.loads(post["response"]["body"]) == {"created": "bolt"}
    assert post["response"]["statusCode"] == 201
    t.shutdown(5)
