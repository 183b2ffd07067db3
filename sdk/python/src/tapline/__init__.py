"""Tapline SDK for Python: captures a service's API traffic and sends it to a Tapline bucket.

See docs/sdk-python.md. ``Tapline`` is the client; the adapters are ``tapline.asgi``
(FastAPI, Starlette), ``tapline.wsgi`` (any WSGI app), ``tapline.flask`` and ``tapline.django``.
"""

from ._core import Tapline
from ._transport import SDK_VERSION as __version__
from .asgi import TaplineASGIMiddleware
from .wsgi import TaplineWSGIMiddleware

__all__ = ["Tapline", "TaplineASGIMiddleware", "TaplineWSGIMiddleware", "__version__"]
