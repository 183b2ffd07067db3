"""HTTP for the SDK's own calls (settings, batches) and the delivery policy: classify, backoff, Retry-After.

The SDK talks to Tapline with ``http.client`` on a keep-alive connection of its own, so its calls
never pass through ``httpx`` or ``requests`` (whose capture would otherwise see them) and the
package has no runtime dependency.
"""

from __future__ import annotations

import http.client
import random
import re
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Literal
from urllib.parse import urlsplit

SDK_VERSION = "0.1.0"
SDK_NAME = f"tapline-python/{SDK_VERSION}"
SDK_HEADER = "x-tapline-sdk"

Outcome = Literal["ok", "retry", "drop"]


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


class Connection:
    """One keep-alive connection to a base URL, reopened after an error. Not thread-safe: one owner."""

    def __init__(self, base: str, timeout_s: float) -> None:
        parts = urlsplit(base)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if self.https else 80)
        self.timeout_s = timeout_s
        self._conn: http.client.HTTPConnection | None = None

    def _open(self) -> http.client.HTTPConnection:
        if self._conn is None:
            if self.https:
                self._conn = http.client.HTTPSConnection(
                    self.host, self.port, timeout=self.timeout_s, context=ssl.create_default_context()
                )
            else:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
            self._conn = None

    def request(self, method: str, path: str, headers: dict[str, str], body: bytes | None = None) -> Answer:
        """One call; raises ``OSError``/``http.client.HTTPException`` on network errors and timeouts."""
        conn = self._open()
        h = {**headers, SDK_HEADER: SDK_VERSION}
        try:
            conn.request(method, path, body=body, headers=h)
            res = conn.getresponse()
            data = res.read(1_048_576)
            if not res.isclosed():
                # An answer larger than the SDK reads: the connection is not reused.
                self.close()
            return Answer(res.status, {k.lower(): v for k, v in res.getheaders()}, data)
        except BaseException:
            self.close()
            raise


_SECONDS = re.compile(r"^\s*\d+(\.\d+)?\s*$")


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """``Retry-After`` in seconds (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    if _SECONDS.match(value):
        return max(0.0, float(value))
    try:
        at = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return max(0.0, at - (time.time() if now is None else now))


def backoff_s(attempt: int, base_s: float, cap_s: float, rand: Callable[[], float] = random.random) -> float:
    """Exponential backoff with full jitter: uniform in ``[0, min(cap, base * 2**attempt)]``."""
    ceiling = min(cap_s, base_s * 2.0 ** min(attempt, 30))
    return rand() * ceiling


def classify(status: int) -> Outcome:
    """2xx ok; 408, 429, 5xx retry; other 4xx drop (retrying cannot help)."""
    if 200 <= status < 300:
        return "ok"
    if status in (408, 429) or status >= 500:
        return "retry"
    return "drop"


class CircuitBreaker:
    """After ``threshold`` consecutive failed attempts, no attempt for ``open_s`` (doubling per
    re-open up to ``max_open_s``); then one attempt (half-open): success closes it, failure re-opens
    it. An ingest outage then costs one attempt per open period, never a retry storm."""

    def __init__(self, threshold: int, open_s: float, max_open_s: float) -> None:
        self.threshold = threshold
        self.open_s = open_s
        self.max_open_s = max_open_s
        self.state: Literal["closed", "open", "half-open"] = "closed"
        self._failures = 0
        self._opens = 0
        self._open_until = 0.0

    def wait_s(self, now: float) -> float:
        """Seconds to wait before the next attempt is allowed (0 = now)."""
        if self.state != "open":
            return 0.0
        if now >= self._open_until:
            self.state = "half-open"
            return 0.0
        return self._open_until - now

    def success(self) -> None:
        self.state = "closed"
        self._failures = 0
        self._opens = 0

    def failure(self, now: float) -> bool:
        """Records a failed attempt; True when this opened the circuit."""
        self._failures += 1
        if self.state == "half-open" or self._failures >= self.threshold:
            self.state = "open"
            self._open_until = now + min(self.max_open_s, self.open_s * 2 ** min(self._opens, 20))
            self._opens += 1
            return True
        return False
