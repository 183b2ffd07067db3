"""Overhead of the SDK in a FastAPI app under uvicorn (docs/sdk-python.md, "Overhead").

    python bench/overhead.py [--rate 1000] [--pairs 8] [--segment 2] [--down 30]

One uvicorn server process serves the same FastAPI app with the SDK's middleware and without it,
switched per segment (pairs in the order AB, BA, AB, ...), so both sides share the process, its
warm-up and the machine's load. A load process sends GET requests open-loop at ``--rate`` per
second, evenly spaced, on keep-alive connections, and measures each answer's latency. The SDK
sends to a fake ingest (a separate process answering 202); each SDK segment ends with a flush, so
its delivery work does not spill into a baseline segment.

Measured per request:
- in the server, the SDK's time on the request path: the middleware's whole call minus the
  application's own time inside it (what the SDK adds before, around and after the app, including
  handing the capture to the queue), p50 / p99;
- by the client, the latency, p50 / p99 per segment, and the median of the per-pair differences.

Then ``--down`` seconds with the ingest unreachable at the same rate, with 2 KB JSON request
bodies captured: the server's RSS every 5 s, the queue's bytes against its bound (16 MiB) and the
records dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from typing import Any

SERVER = r"""
import asyncio, gc, json, os, sys, time
from fastapi import FastAPI, Request
import uvicorn
from tapline import Tapline, TaplineASGIMiddleware

tap = Tapline(
    os.environ["INGEST"],
    "bkt_bench",
    "tok_bench",
    settings_endpoint=os.environ["SETTINGS"],
    flush_at_exit=False,
)
inner = FastAPI()
state = {"sdk": False}
sdk_times = []

@inner.get("/users/{user_id}")
async def user(user_id: int):
    return {"id": user_id, "name": "user"}

@inner.post("/items")
async def items(request: Request):
    body = await request.json()
    return {"ok": True, "n": len(body)}

async def timed_inner(scope, receive, send):
    t = time.perf_counter()
    try:
        await inner(scope, receive, send)
    finally:
        # Per request (the scope the middleware passes on), not shared between concurrent ones.
        scope["bench.inner"] = time.perf_counter() - t

wrapped = TaplineASGIMiddleware(timed_inner, tapline=tap)

async def app(scope, receive, send):
    if scope["type"] == "http" and scope["path"].startswith("/__bench/"):
        return await control(scope, receive, send)
    if scope["type"] == "http" and state["sdk"]:
        t = time.perf_counter()
        await wrapped(scope, receive, send)
        sdk_times.append(time.perf_counter() - t - scope["bench.inner"])
        return
    await inner(scope, receive, send)

async def control(scope, receive, send):
    path = scope["path"]
    out = {}
    if path == "/__bench/sdk-on":
        state["sdk"] = True
    elif path == "/__bench/sdk-off":
        state["sdk"] = False
        loop = asyncio.get_running_loop()
        out["flushed"] = await loop.run_in_executor(None, tap.flush, 30)
    elif path == "/__bench/times":
        out["sdk"] = sdk_times[:]
        sdk_times.clear()
    elif path == "/__bench/stats":
        gc.collect()
        with open(f"/proc/{os.getpid()}/status") as f:
            rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS"))
        out = {"rss_kib": rss, **tap.stats()}
    body = json.dumps(out).encode()
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})

uvicorn.run(app, host="127.0.0.1", port=int(os.environ["PORT"]), log_level="warning", lifespan="off")
"""

FAKE_INGEST = r"""
import json, os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self.answer(200, {"settings": {}, "redactionRules": [], "exclusionRules": []})
    def do_POST(self):
        n = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(n)
        # A real ingest runs elsewhere: only the gzip magic bytes are checked.
        assert raw[:2] == b"\x1f\x8b"
        self.answer(202, {"accepted": 1, "rejected": []})

ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()
"""


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(port: int, path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as res:
        return json.loads(res.read())


async def load(port: int, rate: float, seconds: float, body: bytes | None = None) -> list[float]:
    """Open-loop load: one request every 1/rate s on keep-alive connections; latencies in s."""
    if body is None:
        req = b"GET /users/42 HTTP/1.1\r\nhost: bench\r\n\r\n"
    else:
        req = (
            b"POST /items HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
    free: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()
    for _ in range(64):
        free.put_nowait(await asyncio.open_connection("127.0.0.1", port))
    latencies: list[float] = []
    pending: set[asyncio.Task[None]] = set()

    async def one() -> None:
        reader, writer = await free.get()
        t = time.perf_counter()
        writer.write(req)
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        await reader.readexactly(length)
        latencies.append(time.perf_counter() - t)
        free.put_nowait((reader, writer))

    start = time.perf_counter()
    n = int(rate * seconds)
    for i in range(n):
        delay = start + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        task = asyncio.create_task(one())
        pending.add(task)
        task.add_done_callback(pending.discard)
    await asyncio.gather(*pending)
    while not free.empty():
        _, w = free.get_nowait()
        w.close()
    return latencies


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p * len(s)))] if s else float("nan")


def start(code: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code], env={**os.environ, **env})


def wait_up(port: int) -> None:
    for _ in range(200):
        try:
            get(port, "/__bench/stats")
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--segment", type=float, default=2.0)
    ap.add_argument("--down", type=float, default=30.0)
    args = ap.parse_args()

    ingest_port, port = free_port(), free_port()
    ingest = start(FAKE_INGEST, {"PORT": str(ingest_port)})
    fake = f"http://127.0.0.1:{ingest_port}"
    server = start(SERVER, {"PORT": str(port), "INGEST": fake, "SETTINGS": fake})
    try:
        wait_up(port)
        get(port, "/__bench/sdk-on")
        asyncio.run(load(port, args.rate, 2.0))  # warm-up of both paths
        get(port, "/__bench/sdk-off")
        get(port, "/__bench/times")
        client: dict[str, list[float]] = {"sdk": [], "base": []}
        diffs50: list[float] = []
        diffs99: list[float] = []
        sdk_path: list[float] = []
        for pair in range(args.pairs):
            order = ["sdk", "base"] if pair % 2 == 0 else ["base", "sdk"]
            seg: dict[str, list[float]] = {}
            for side in order:
                get(port, "/__bench/sdk-on" if side == "sdk" else "/__bench/sdk-off")
                seg[side] = asyncio.run(load(port, args.rate, args.segment))
                if side == "sdk":
                    flushed = get(port, "/__bench/sdk-off")
                    assert flushed["flushed"], "the SDK segment's records were not all delivered"
                    sdk_path.extend(get(port, "/__bench/times")["sdk"])
                client[side].extend(seg[side])
            diffs50.append(pct(seg["sdk"], 0.5) - pct(seg["base"], 0.5))
            diffs99.append(pct(seg["sdk"], 0.99) - pct(seg["base"], 0.99))
        stats = get(port, "/__bench/stats")
        us = 1e6
        print(f"rate {args.rate:.0f}/s, {args.pairs} pairs of {args.segment:.0f} s segments")
        print(
            f"SDK time on the request path: p50 {pct(sdk_path, 0.5) * us:.1f} us, "
            f"p99 {pct(sdk_path, 0.99) * us:.1f} us ({len(sdk_path)} requests)"
        )
        for side in ("base", "sdk"):
            xs = client[side]
            print(
                f"client {side}: p50 {pct(xs, 0.5) * us:.0f} us, p99 {pct(xs, 0.99) * us:.0f} us ({len(xs)})"
            )
        print(
            f"client p50, median per-pair difference: {statistics.median(diffs50) * us:+.1f} us "
            f"(range {min(diffs50) * us:+.0f} .. {max(diffs50) * us:+.0f})"
        )
        print(f"client p99, median per-pair difference: {statistics.median(diffs99) * us:+.1f} us")
        print(
            f"SDK stats: sent {stats['sent']}, dropped {stats['dropped']}, "
            f"internalErrors {stats['internalErrors']}"
        )
    finally:
        server.terminate()
        server.wait()

    if args.down <= 0:
        ingest.terminate()
        return
    # Ingest unreachable: nothing listens on the port batches go to (the settings still answer,
    # so the SDK attempts batches and its circuit opens).
    port = free_port()
    server = start(SERVER, {"PORT": str(port), "INGEST": f"http://127.0.0.1:{free_port()}", "SETTINGS": fake})
    try:
        wait_up(port)
        get(port, "/__bench/sdk-on")
        body = json.dumps(
            {"items": [{"id": i, "name": f"item-{i}", "note": "x" * 40} for i in range(30)]}
        ).encode()
        print(f"ingest unreachable, {args.rate:.0f}/s with {len(body)} B JSON bodies:")
        before = get(port, "/__bench/stats")
        print(f"  start: RSS {before['rss_kib'] / 1024:.1f} MiB")
        elapsed = 0.0
        while elapsed < args.down:
            asyncio.run(load(port, args.rate, 5.0, body))
            elapsed += 5.0
            s = get(port, "/__bench/stats")
            print(
                f"  {elapsed:4.0f} s: RSS {s['rss_kib'] / 1024:.1f} MiB, queued {s['queuedBytes']} B "
                f"({s['queuedRecords']} records), dropped {s['dropped']}, captured {s['captured']}, "
                f"circuit {s['circuit']}"
            )
    finally:
        server.terminate()
        server.wait()
        ingest.terminate()


if __name__ == "__main__":
    main()
