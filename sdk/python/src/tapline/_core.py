"""The delivery core: settings, client rules, the bounded queue, batching, gzip, retries, circuit.

Adapters (ASGI, WSGI, Django, Flask, httpx, requests) call ``should_capture`` and ``submit`` on
the host's request path; everything else runs on one background thread. Nothing here raises into
the host: errors are counted in ``stats()["internalErrors"]`` and logged at debug level.
"""

from __future__ import annotations

import atexit
import collections
import gzip
import json
import logging
import math
import os
import random
import re
import socket
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar
from urllib.parse import quote, urlencode, urlsplit

from ._criteria import CompiledCriteria, compile_criteria, excluded_by_criteria
from ._record import DEFAULT_BODY_TYPES, Capture, build_record
from ._rules import (
    CompiledExclusion,
    CompiledRedaction,
    compile_exclusion,
    compile_redaction,
    dumps,
    excluded_by,
    redact_record,
    sample_rate_of,
)
from ._sensitive import SensitiveRules, compile_sensitive, redact_sensitive
from ._transport import (
    SDK_NAME,
    CircuitBreaker,
    Connection,
    backoff_s,
    classify,
    retry_after_s,
)

log = logging.getLogger("tapline")

T = TypeVar("T")

_ENV_SID = re.compile(r"^[a-z0-9]{6}$")
#: Level 1 compresses captured-traffic JSON nearly as well as level 6 for a quarter of the CPU.
_GZIP_LEVEL = 1
#: Records built per hold of the GIL while a batch is made; then the thread yields it.
_BUILD_SLICE = 16


def _num(v: object, default: float, lo: float, hi: float) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
        return float(min(hi, max(lo, v)))
    return default


class Tapline:
    """Captures a Python service's traffic and sends it to a Tapline bucket (docs/sdk-python.md).

    Bad option values fall back to their defaults; the constructor never raises.
    """

    def __init__(
        self,
        endpoint: str,
        bucket_sid: str,
        token: str,
        *,
        settings_endpoint: str | None = None,
        environment: str | None = None,
        tags: Mapping[str, str] | None = None,
        client_id: str | None = None,
        capture_outgoing: bool = False,
        max_body_bytes: int = 65536,
        body_content_types: list[str] | None = None,
        drop_headers: list[str] | None = None,
        sampling: Mapping[str, float] | None = None,
        max_queue_bytes: int = 16 * 1024 * 1024,
        batch_size: int = 500,
        batch_bytes: int = 1024 * 1024,
        flush_interval: float = 1.0,
        settings_refresh: float = 60.0,
        request_timeout: float = 10.0,
        retry_base: float = 0.5,
        retry_max: float = 30.0,
        circuit_threshold: int = 5,
        circuit_open: float = 5.0,
        circuit_max_open: float = 60.0,
        flush_at_exit: bool = True,
        shutdown_timeout: float = 5.0,
        debug: bool = False,
        enabled: bool = True,
    ) -> None:
        self.endpoint = _base_url(endpoint)
        self.settings_endpoint = _base_url(settings_endpoint) if settings_endpoint else self.endpoint
        self.bucket_sid = str(bucket_sid or "")
        self._token = str(token or "")
        env = environment if isinstance(environment, str) else None
        self.environment = env if env is not None and _ENV_SID.match(env) else None
        tag_list = [
            {"key": k[:256], "value": v[:4096]}
            for k, v in (tags or {}).items()
            if isinstance(k, str) and k and isinstance(v, str)
        ]
        tag_list.append({"key": "sdk", "value": SDK_NAME})
        # An environment that is not an environment sid still travels, as a tag.
        if env is not None and self.environment is None:
            tag_list.append({"key": "environment", "value": env[:4096]})
        self.tags = tag_list
        self.client_id = (client_id or f"python-{socket.gethostname()}-{os.getpid()}")[:200]
        self.capture_outgoing = capture_outgoing is True
        self.max_body_bytes = int(_num(max_body_bytes, 65536, 0, 1_048_576))
        self.body_content_types = (
            tuple(str(s).lower() for s in body_content_types)
            if isinstance(body_content_types, list)
            else DEFAULT_BODY_TYPES
        )
        self.drop_headers = (
            frozenset(str(h).lower() for h in drop_headers) if isinstance(drop_headers, list) else None
        )
        self.sampling = dict(sampling) if isinstance(sampling, Mapping) else None
        self.max_queue_bytes = int(_num(max_queue_bytes, 16 * 1024 * 1024, 16 * 1024, 1024 * 1024 * 1024))
        self.batch_size = int(_num(batch_size, 500, 1, 1000))
        self.batch_bytes = int(_num(batch_bytes, 1024 * 1024, 1024, 4 * 1024 * 1024))
        self.flush_interval = _num(flush_interval, 1.0, 0.01, 600.0)
        self.settings_refresh = _num(settings_refresh, 60.0, 0.1, 86400.0)
        self.request_timeout = _num(request_timeout, 10.0, 0.1, 600.0)
        self.retry_base = _num(retry_base, 0.5, 0.001, 600.0)
        self.retry_max = _num(retry_max, 30.0, 0.001, 3600.0)
        self.shutdown_timeout = _num(shutdown_timeout, 5.0, 0.0, 600.0)
        self.enabled = enabled is not False
        self._debug = debug is True
        self._circuit = CircuitBreaker(
            int(_num(circuit_threshold, 5, 1, 1000)),
            _num(circuit_open, 5.0, 0.001, 3600.0),
            _num(circuit_max_open, 60.0, 0.001, 3600.0),
        )

        self.remote: dict[str, Any] = {}
        self._req_limit = self._res_limit = self.max_body_bytes
        #: no per-endpoint sampling and a bucket rate of 1: every call is taken without computing a rate
        self._sample_all = not self.sampling
        self._redactions: list[CompiledRedaction] = []
        self._sensitive: SensitiveRules = compile_sensitive([])
        self._criteria: list[CompiledCriteria] = []
        self._exclusions: list[CompiledExclusion] = []
        self._settings_loaded = False
        self._settings_failures = 0
        self._next_settings = 0.0

        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)
        self._queue: collections.deque[tuple[Capture, int]] = collections.deque()
        self._queued_bytes = 0
        self._due_at: float | None = None
        #: the batch being built or sent: (records, estimated bytes, gzip body or None while building)
        self._inflight: tuple[int, int, bytes | None] | None = None
        self._sending = False
        self._attempt = 0
        self._flush_waiters = 0
        self._force_attempt = False
        self._closed = False
        self._counters = {
            "captured": 0,
            "skipped": 0,
            "excluded": 0,
            "dropped": 0,
            "sent": 0,
            "rejected": 0,
            "batches": 0,
            "failures": 0,
            "retries": 0,
            "internalErrors": 0,
        }
        self._ingest = Connection(self.endpoint, self.request_timeout)
        self._settings_conn = Connection(self.settings_endpoint, self.request_timeout)
        self._thread: threading.Thread | None = None
        if self.enabled:
            if flush_at_exit:
                atexit.register(self._at_exit)
            ref = weakref.ref(self)
            os.register_at_fork(after_in_child=lambda: _after_fork(ref))
            self._start_thread()
            if self.capture_outgoing:
                from .outgoing import instrument_httpx, instrument_requests

                instrument_httpx(self)
                instrument_requests(self)

    # ------------------------------------------------------------------------------------------
    # logging and safety

    def debug(self, msg: str, **fields: object) -> None:
        if self._debug or self.remote.get("debug") is True:
            log.debug("tapline: %s %s", msg, fields)

    def warn(self, msg: str, **fields: object) -> None:
        log.warning("tapline: %s %s", msg, fields)

    def internal_error(self, err: BaseException) -> None:
        self._counters["internalErrors"] += 1
        self.debug("internal error", err=repr(err))

    def guard(self, fn: Callable[[], T], fallback: T) -> T:
        """Runs ``fn``; anything it raises is counted and logged instead of reaching the host."""
        try:
            return fn()
        except Exception as err:  # noqa: BLE001 - the host must never see the SDK's errors
            self.internal_error(err)
            return fallback

    # ------------------------------------------------------------------------------------------
    # capture decisions (request path)

    @property
    def active(self) -> bool:
        return self.enabled and not self._closed and self.remote.get("enabled") is not False

    @property
    def outgoing_enabled(self) -> bool:
        return self.active and self.capture_outgoing and self.remote.get("interceptOutbound") is not False

    def body_limit(self, direction: Literal["request", "response"]) -> int:
        """Body bytes kept for this direction under the options and the bucket's settings."""
        return self._req_limit if direction == "request" else self._res_limit

    def _limits(self) -> None:
        remote = self.remote.get("maxBodyBytes")
        limit = (
            min(remote, self.max_body_bytes)
            if isinstance(remote, int) and remote >= 0
            else self.max_body_bytes
        )
        self._req_limit = 0 if self.remote.get("captureRequestBody") is False else limit
        self._res_limit = 0 if self.remote.get("captureResponseBody") is False else limit

    def should_capture(self, method: str, path: str, endpoint: str | None, status: int | None) -> bool:
        """Sampling and path exclusions for a finished call (cheap: runs before anything is built)."""
        if not self.active:
            return False
        if not self._sample_all:
            rate = sample_rate_of(self.sampling, self.remote.get("sampleRate", 1), method, endpoint, path)
            if rate < 1 and (rate <= 0 or random.random() >= rate):
                self._counters["skipped"] += 1
                return False
        if self._exclusions and excluded_by(self._exclusions, method, path, status, self.environment or ""):
            self._counters["excluded"] += 1
            self._counters["skipped"] += 1
            return False
        return True

    def submit(self, capture: Capture) -> None:
        """Queues a finished capture; the oldest are dropped (and counted) past the byte bound."""
        if not self.active:
            return
        size = capture.estimate()
        with self._lock:
            self._counters["captured"] += 1
            # The batch being retried holds the oldest records: past the bound it goes first.
            inflight = self._inflight
            if (
                inflight is not None
                and not self._sending
                and inflight[2] is not None
                and self._queued_bytes + size + inflight[1] > self.max_queue_bytes
            ):
                self._counters["dropped"] += inflight[0]
                self._inflight = None
                self._attempt = 0
            bound = self.max_queue_bytes - (self._inflight[1] if self._inflight is not None else 0)
            q = self._queue
            while q and self._queued_bytes + size > bound:
                _, s = q.popleft()
                self._queued_bytes -= s
                self._counters["dropped"] += 1
            if size > bound:
                self._counters["dropped"] += 1
                return
            was_empty = not q
            q.append((capture, size))
            self._queued_bytes += size
            if was_empty:
                self._due_at = time.monotonic() + self.flush_interval
                self._cv.notify()
            elif len(q) >= self.batch_size or self._queued_bytes >= self.batch_bytes:
                self._cv.notify()

    # ------------------------------------------------------------------------------------------
    # settings

    def apply_settings(self, body: Mapping[str, Any]) -> None:
        """Takes a ``GET /v1/buckets/{b}/sdk`` answer; every field may be missing or malformed."""
        s = body.get("settings") if isinstance(body, Mapping) else None
        s = s if isinstance(s, Mapping) else {}
        remote: dict[str, Any] = {}
        for k in ("enabled", "captureRequestBody", "captureResponseBody", "interceptOutbound", "debug"):
            if isinstance(s.get(k), bool):
                remote[k] = s[k]
        for k in ("maxBodyBytes", "sampleRate"):
            v = s.get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                remote[k] = v
        self.remote = remote
        self._limits()
        self._sample_all = not self.sampling and remote.get("sampleRate", 1) == 1
        rdc = body.get("redactionRules")
        xcl = body.get("exclusionRules")
        rdc_list = rdc if isinstance(rdc, list) else []
        xcl_list = xcl if isinstance(xcl, list) else []
        # Only `client` rules are the SDK's; `server` ones are the processor's (never both).
        client_side = body.get("redactAt") in (None, "client")
        redactions = (
            [r for r in (compile_redaction(x) for x in rdc_list) if r is not None] if client_side else []
        )
        self._exclusions = [x for x in (compile_exclusion(r) for r in xcl_list) if x is not None]
        self._redactions = redactions
        # Shape A: the server's sensitive-data engine, ported (_sensitive.py); a rule that does not
        # compile is skipped and named at debug level.
        sen = body.get("sensitiveRules")
        self._sensitive = compile_sensitive(sen if client_side and isinstance(sen, list) else [])
        xca = body.get("exclusionCriteria")
        self._criteria, skipped = compile_criteria(xca if isinstance(xca, list) else [])
        skipped += self._sensitive.skipped
        if skipped:
            self.debug("Shape A rules that do not compile, skipped", skipped=skipped)
        if client_side and len(redactions) < len(rdc_list):
            self.warn("redaction rules not understood, skipped", rules=len(rdc_list) - len(redactions))
        self._settings_loaded = True
        if remote.get("enabled") is False:
            with self._lock:
                self._counters["skipped"] += len(self._queue)
                self._queue.clear()
                self._queued_bytes = 0
        self.debug(
            "settings loaded",
            redactions=len(self._redactions),
            exclusions=len(self._exclusions),
            sensitiveRules=self._sensitive.size,
            exclusionCriteria=len(self._criteria),
            settings=remote,
        )

    def _load_settings(self) -> None:
        q = {"redactAt": "client", "clientId": self.client_id}
        if self.environment:
            q["environmentSid"] = self.environment
        bucket = quote(self.bucket_sid, safe="")
        path = f"{self._prefix(self.settings_endpoint)}/v1/buckets/{bucket}/sdk?{urlencode(q)}"
        try:
            res = self._settings_conn.request(
                "GET", path, {"authorization": f"Bearer {self._token}", "accept": "application/json"}
            )
            if res.status == 200:
                self.apply_settings(json.loads(res.body))
                self._settings_failures = 0
            elif classify(res.status) == "drop":
                # Answered, but without settings (an older server, a token without the scope):
                # defaults, so delivery does not wait forever; asked again at the next refresh.
                if not self._settings_loaded:
                    self.warn("SDK settings unavailable, defaults used", status=res.status)
                self._settings_loaded = True
                self._settings_failures = 0
            else:
                raise OSError(f"settings answered {res.status}")
        except Exception as err:  # noqa: BLE001 - network errors, bad JSON: retried later
            self._settings_failures += 1
            self.debug("settings fetch failed", err=repr(err))
        wait = (
            self.settings_refresh
            if self._settings_loaded
            else min(self.settings_refresh, 0.25 * 2 ** min(self._settings_failures, 8))
        )
        self._next_settings = time.monotonic() + wait

    @staticmethod
    def _prefix(base: str) -> str:
        return urlsplit(base).path.rstrip("/")

    # ------------------------------------------------------------------------------------------
    # the delivery thread

    def _start_thread(self) -> None:
        self._thread = threading.Thread(target=self._run, name="tapline-delivery", daemon=True)
        self._thread.start()

    def _after_fork(self) -> None:
        """In a forked worker (gunicorn, uWSGI) the parent's thread does not exist: a new one
        starts, with a queue of its own (the parent's records are the parent's to send)."""
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)
        self._queue.clear()
        self._queued_bytes = 0
        self._inflight = None
        self._sending = False
        self._flush_waiters = 0
        self._ingest = Connection(self.endpoint, self.request_timeout)
        self._settings_conn = Connection(self.settings_endpoint, self.request_timeout)
        self._start_thread()

    def _sendable(self) -> bool:
        return self._settings_loaded and self.active

    def _run(self) -> None:
        while True:
            try:
                if not self._step():
                    return
            except Exception as err:  # noqa: BLE001 - the thread must keep running
                self.internal_error(err)
                time.sleep(0.1)

    def _wait(self, seconds: float) -> None:
        """A wait the thread is woken from by a flush, a full batch or shutdown."""
        with self._cv:
            if self._closed or (self._force_attempt and self._inflight is not None and self._sendable()):
                return
            self._cv.wait(max(0.0, min(seconds, 3600.0)))

    def _step(self) -> bool:
        """One turn of the delivery loop; False when the thread ends."""
        now = time.monotonic()
        if self._closed and self._flush_waiters == 0:
            return False
        if self.enabled and now >= self._next_settings and not self._closed:
            self._load_settings()
        if not self._sendable():
            self._notify_if_drained()
            self._wait(self._next_settings - time.monotonic())
            return True
        if self._inflight is None:
            with self._lock:
                n = len(self._queue)
                full = n >= self.batch_size or self._queued_bytes >= self.batch_bytes
                due = self._due_at is not None and now >= self._due_at
                if n == 0 or not (full or due or self._flush_waiters > 0):
                    if n == 0:
                        self._cv.notify_all()
                    until = self._next_settings if n == 0 else min(self._next_settings, self._due_at or now)
                    if self._flush_waiters == 0 and not self._closed:
                        self._cv.wait(max(0.0, min(until - now, 3600.0)))
                    return True
            self._take_batch()
            return True
        wait = self._circuit.wait_s(time.monotonic())
        # A flush (shutdown) gets one attempt even while the circuit is open.
        if wait > 0 and not self._force_attempt:
            self._wait(wait)
            return True
        self._force_attempt = False
        self._send()
        self._notify_if_drained()
        return True

    def _notify_if_drained(self) -> None:
        with self._cv:
            self._cv.notify_all()

    def _drained(self) -> bool:
        return not self._queue and self._inflight is None

    def _take_batch(self) -> None:
        """Takes the next batch off the queue: builds, filters and redacts its records, then gzips it."""
        with self._lock:
            items: list[Capture] = []
            est = 0
            while self._queue and len(items) < self.batch_size and est < 2 * self.batch_bytes:
                c, s = self._queue.popleft()
                items.append(c)
                est += s
            self._queued_bytes -= est
            self._due_at = time.monotonic() + self.flush_interval if self._queue else None
            self._inflight = (len(items), est, None)
        env = self.environment or ""
        lines: list[bytes] = []
        size = 0
        rest: list[Capture] = []
        for i, c in enumerate(items):
            if size >= self.batch_bytes:
                rest = items[i:]
                break
            line = self._line(c, env)
            if line is not None:
                lines.append(line)
                size += len(line)
            if i % _BUILD_SLICE == _BUILD_SLICE - 1:
                # Lets the host's threads take the GIL between slices of records.
                time.sleep(0)
        with self._lock:
            if rest:
                back = [(c, c.estimate()) for c in rest]
                self._queue.extendleft(reversed(back))
                moved = sum(s for _, s in back)
                self._queued_bytes += moved
                est -= moved
                self._due_at = time.monotonic()
            if not lines:
                self._inflight = None
                return
        raw = b'{"records":[' + b",".join(lines) + b"]}"
        body = gzip.compress(raw, compresslevel=_GZIP_LEVEL, mtime=0)
        with self._lock:
            self._inflight = (len(lines), est, body)

    def _line(self, c: Capture, env: str) -> bytes | None:
        """A capture's JSON line under the rules in force now; None when a rule excludes it."""
        try:
            if self._exclusions and excluded_by(self._exclusions, c.method, c.path, c.status, env):
                self._counters["excluded"] += 1
                return None
            record = build_record(c, self.drop_headers, self.body_content_types)
            for t in self.tags:
                record["tags"].append(t)
            if self.environment:
                record["environmentSid"] = self.environment
            # Shape A criteria read the whole record (status, tags, endpoint): checked once it is built.
            if self._criteria and excluded_by_criteria(self._criteria, record, env):
                self._counters["excluded"] += 1
                return None
            if self._redactions:
                redact_record(record, self._redactions, env)
            # Shape A after Shape B, the server's order; sizes stay as captured.
            if self._sensitive.rules:
                redact_sensitive(record, self._sensitive)
            return dumps(record).encode("utf-8")
        except Exception as err:  # noqa: BLE001 - one bad capture must not stop the batch
            self.internal_error(err)
            return None

    def _send(self) -> None:
        batch = self._inflight
        if batch is None or batch[2] is None:
            return
        records, _, body = batch
        path = f"{self._prefix(self.endpoint)}/v1/buckets/{quote(self.bucket_sid, safe='')}/ingest"
        status = 0
        retry_after: float | None = None
        self._sending = True
        try:
            res = self._ingest.request(
                "POST",
                path,
                {
                    "authorization": f"Bearer {self._token}",
                    "content-type": "application/json",
                    "content-encoding": "gzip",
                },
                body,
            )
            status = res.status
            retry_after = retry_after_s(res.headers.get("retry-after"))
            kind = classify(status)
            if kind == "ok":
                self._circuit.success()
                rejected = 0
                try:
                    answer = json.loads(res.body)
                    rej = answer.get("rejected") if isinstance(answer, dict) else None
                    rejected = len(rej) if isinstance(rej, list) else 0
                    if rejected:
                        self.warn(
                            "ingest rejected records", rejected=rej[:3] if isinstance(rej, list) else None
                        )
                except ValueError:
                    pass
                self._done(records - rejected, rejected)
                self._counters["batches"] += 1
                self.debug("batch sent", records=records, rejected=rejected)
                return
            if kind == "drop":
                self._circuit.success()
                self.warn("ingest refused a batch; dropped", status=status, answer=res.body[:500])
                self._done(0, records)
                return
        except Exception as err:  # noqa: BLE001 - network errors and timeouts are retried
            self.debug("batch send failed", err=repr(err))
        finally:
            self._sending = False
        self._counters["failures"] += 1
        opened = self._circuit.failure(time.monotonic())
        if opened:
            self.warn("ingest unreachable, circuit open", status=status)
        with self._lock:
            if self._inflight is not None:
                self._counters["retries"] += 1
                self._attempt += 1
        # The circuit's own wait applies when it opened; otherwise backoff (or Retry-After).
        if not opened:
            self._wait(
                retry_after
                if retry_after is not None
                else backoff_s(self._attempt - 1, self.retry_base, self.retry_max)
            )
        elif retry_after is not None:
            self._wait(retry_after)

    def _done(self, sent: int, rejected: int) -> None:
        with self._lock:
            self._counters["sent"] += sent
            self._counters["rejected"] += rejected
            self._inflight = None
            self._attempt = 0

    # ------------------------------------------------------------------------------------------
    # flush and shutdown

    def flush(self, timeout: float = 10.0) -> bool:
        """Sends everything queued; True when nothing is left, False at the timeout (the records
        stay queued). One attempt is made even while the circuit is open."""
        if not self.enabled or self._thread is None:
            return True
        deadline = time.monotonic() + max(0.0, timeout)
        with self._cv:
            if self._drained():
                return True
            if not self.active and not self._closed:
                return not self._queue
            self._flush_waiters += 1
            self._force_attempt = True
            if self._due_at is not None:
                self._due_at = time.monotonic()
            self._cv.notify_all()
            try:
                while not self._drained():
                    left = deadline - time.monotonic()
                    if left <= 0 or not self._thread.is_alive():
                        return False
                    self._cv.wait(min(left, 0.05))
                return True
            finally:
                self._flush_waiters -= 1

    async def aflush(self, timeout: float = 10.0) -> bool:
        """``flush`` for asyncio code: waits in a worker thread, so the event loop keeps running."""
        import asyncio

        return await asyncio.get_running_loop().run_in_executor(None, self.flush, timeout)

    def shutdown(self, timeout: float | None = None) -> bool:
        """A final flush, then the delivery thread ends and capture stops."""
        if self._closed:
            return self._drained()
        ok = self.flush(self.shutdown_timeout if timeout is None else timeout)
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        self._ingest.close()
        self._settings_conn.close()
        return ok

    def _at_exit(self) -> None:
        self.guard(lambda: self.shutdown(), False)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            inflight = self._inflight
            return {
                **self._counters,
                "queuedRecords": len(self._queue) + (inflight[0] if inflight else 0),
                "queuedBytes": self._queued_bytes + (inflight[1] if inflight else 0),
                "circuit": self._circuit.state,
                "settingsLoaded": self._settings_loaded,
                "redactionRules": len(self._redactions),
                "exclusionRules": len(self._exclusions),
                "sensitiveRules": self._sensitive.size,
                "exclusionCriteria": len(self._criteria),
            }

    # ------------------------------------------------------------------------------------------
    # adapters

    def asgi(self, app: Any) -> Any:
        """Wraps an ASGI application (FastAPI, Starlette, any ASGI app)."""
        from .asgi import TaplineASGIMiddleware

        return TaplineASGIMiddleware(app, tapline=self)

    def wsgi(self, app: Any) -> Any:
        """Wraps a WSGI application (Flask, Django, any WSGI app)."""
        from .wsgi import TaplineWSGIMiddleware

        return TaplineWSGIMiddleware(app, tapline=self)


def _after_fork(ref: weakref.ReferenceType[Tapline]) -> None:
    tap = ref()
    if tap is not None and not tap._closed:
        tap._after_fork()


def _base_url(s: str | None) -> str:
    try:
        parts = urlsplit(s or "")
    except ValueError:
        parts = urlsplit("")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "http://127.0.0.1:8081"
    return (s or "").rstrip("/")
