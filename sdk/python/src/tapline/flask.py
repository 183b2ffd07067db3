"""Flask extension: ``TaplineFlask(app, tapline)`` (or ``init_app``) captures every request of the app.

It wraps ``app.wsgi_app`` with the WSGI middleware and, in a ``before_request`` hook, hands it the
matched URL rule as the route template (``/users/<int:user_id>`` -> ``/users/{user_id}``).
"""

from __future__ import annotations

import re
from typing import Any

from ._core import Tapline
from .wsgi import ENDPOINT_KEY, TaplineWSGIMiddleware

_CONVERTER = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")


def flask_template(rule: str) -> str:
    """A Flask rule with its converters written as ``{name}``, the server's template style."""
    return _CONVERTER.sub(r"{\1}", rule)


class TaplineFlask:
    """The Flask extension.

    The client is ``tapline=``, or made from ``app.config["TAPLINE"]`` (Tapline's keyword arguments).
    """

    def __init__(self, app: Any = None, tapline: Tapline | None = None) -> None:
        self.tapline = tapline
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Any) -> None:
        if self.tapline is None:
            self.tapline = Tapline(**app.config["TAPLINE"])
        tap = self.tapline
        app.wsgi_app = TaplineWSGIMiddleware(app.wsgi_app, tapline=tap)
        app.extensions["tapline"] = self

        from flask import request

        def set_template() -> None:
            try:
                rule = request.url_rule
                if rule is not None:
                    request.environ[ENDPOINT_KEY] = flask_template(rule.rule)
            except Exception as err:  # noqa: BLE001 - never into the host
                tap.internal_error(err)

        # First in line, so an earlier hook that answers (auth) still leaves the template set.
        app.before_request_funcs.setdefault(None, []).insert(0, set_template)
