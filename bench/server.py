"""Benchmarks of the server extension. Prints medians; targets in docs/benchmarks.md.

    python bench/server.py            # everything (about a minute on 2 cores)
    python bench/server.py --quick    # smaller counts

1. action-log appends per second (batched ``log_actions``; single ``log_action`` for contrast)
2. a history page (``GET .../messages?limit=50``) at 100,000 stored messages
3. 50 sessions, each streaming 200 events/s through kernel links to a WebSocket client each:
   events lost
4. kernel event -> WebSocket client latency
5. server start with the extension vs without (jupyter-ai 3.2.0 adds about 4 s)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from think_kernel.kernel.link import KernelLink, kernel_identity  # noqa: E402
from think_kernel.store import Store  # noqa: E402

TOKEN = "bench-token"


def report(name: str, value: float, unit: str, target: str) -> None:
    """One result line."""
    print(f"{name:<58} {value:>12,.2f} {unit:<8} (target {target})", flush=True)


# -- store ---------------------------------------------------------------------------------


async def bench_store(tmp: Path, quick: bool) -> None:
    store = await Store.open(tmp / "bench.db")
    n = 20_000 if quick else 100_000
    rows = [
        {"session_id": "s", "tool": "bash", "input_summary": f"echo {i}", "success": True}
        for i in range(n)
    ]
    t0 = time.perf_counter()
    for start in range(0, n, 1000):
        await store.log_actions(rows[start : start + 1000])
    report(
        "action-log appends/s, batches of 1000",
        n / (time.perf_counter() - t0),
        "rows/s",
        ">= 20,000",
    )
    t0 = time.perf_counter()
    for _ in range(2000):
        await store.log_action(session_id="s", tool="bash", success=True)
    report(
        "action-log appends/s, one at a time (committed each)",
        2000 / (time.perf_counter() - t0),
        "rows/s",
        "for contrast",
    )
    # 100,000 messages in one session, inserted in bulk (the API under test is the read)
    await store.create_session(id="big")
    now = time.time()
    await store.db.execute("BEGIN")
    await store.db.executemany(
        "INSERT INTO messages (id, session_id, seq, role, content, status, created_at,"
        " updated_at) VALUES (?, 'big', ?, ?, ?, 'complete', ?, ?)",
        [
            (f"m{i}", i, "user" if i % 2 else "assistant", f"message {i} " + "x" * 200, now, now)
            for i in range(1, 100_001)
        ],
    )
    await store.db.execute("COMMIT")
    await store.close()


# -- a real server ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(tmp: Path) -> dict[str, str]:
    # Stores live in the data dir (one folder per root): keep the bench's out of the user's.
    return {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"), "PYTHONPATH": str(REPO),
            "JUPYTER_DATA_DIR": str(tmp / "data")}  # fmt: skip


def start_server(root: Path, tmp: Path, extension: bool) -> tuple[subprocess.Popen, int]:
    port = free_port()
    log = open(tmp / f"server-{port}.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_server",
            "--allow-root",
            "--no-browser",
            f"--port={port}",
            "--ServerApp.port_retries=0",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.token={TOKEN}",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.jpserver_extensions",
            f"jupyter_ext={extension}",
        ],
        env=server_env(tmp),
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    return proc, port


def call(port: int, method: str, path: str, body: Any = None) -> Any:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"token {TOKEN}"},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        text = resp.read().decode()
    return json.loads(text) if text else None


def wait_up(port: int, path: str = "api/status", timeout: float = 60) -> float:
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < timeout:
        try:
            call(port, "GET", path)
            return time.perf_counter() - t0
        except OSError:
            time.sleep(0.01)
    raise TimeoutError("server did not start")


def bench_start(tmp: Path, runs: int) -> None:
    root = tmp / "start-root"
    root.mkdir(exist_ok=True)
    times: dict[bool, list[float]] = {True: [], False: []}
    think_ready: list[float] = []
    for _ in range(runs):
        for ext in (False, True):
            t0 = time.perf_counter()
            proc, port = start_server(root, tmp, ext)
            try:
                wait_up(port, "api/status")
                times[ext].append(time.perf_counter() - t0)
                if ext:
                    wait_up(port, "api/think/sessions")
                    think_ready.append(time.perf_counter() - t0)
            finally:
                proc.terminate()
                proc.wait(10)
    without, with_ = statistics.median(times[False]), statistics.median(times[True])
    report("server start without the extension (GET /api/status)", without, "s", "baseline")
    report("server start with the extension (GET /api/status)", with_, "s", "")
    report(
        "server start with the extension (GET /api/think/sessions)",
        statistics.median(think_ready),
        "s",
        "",
    )
    report("  extension start cost", with_ - without, "s", "<= +0.1 s; jupyter-ai 3.2.0: +3.96 s")


async def ws_client(port: int, sid: str) -> Any:
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    req = HTTPRequest(
        f"ws://127.0.0.1:{port}/api/think/sessions/{sid}/ws",
        headers={"Authorization": f"token {TOKEN}"},
    )
    return await websocket_connect(req)


class Sink:
    """A runtime stand-in on the kernel side of a link."""

    def __init__(self) -> None:
        self.sinks: list[Any] = []
        self.session_id = ""

    def add_sink(self, sink: Any) -> None:
        self.sinks.append(sink)


async def bench_live(tmp: Path, quick: bool) -> None:
    root = tmp / "live-root"
    # A store of an older version, in <root>/.think: the server moves it on start.
    (root / ".think").mkdir(parents=True)
    os.replace(tmp / "bench.db", root / ".think" / "think.db")
    for suffix in ("-wal", "-shm"):
        if (tmp / f"bench.db{suffix}").exists():
            os.replace(tmp / f"bench.db{suffix}", root / ".think" / f"think.db{suffix}")
    proc, port = start_server(root, tmp, True)
    loop = asyncio.get_running_loop()
    try:
        await asyncio.to_thread(wait_up, port, "api/think/sessions")
        # 2. history page at 100,000 messages, over HTTP
        lat = []
        for i in range(50):
            t0 = time.perf_counter()
            page = await asyncio.to_thread(
                call,
                port,
                "GET",
                "api/think/sessions/big/messages?limit=50" + ("" if i % 2 else "&before=50000"),
            )
            lat.append((time.perf_counter() - t0) * 1000)
            assert len(page["messages"]) == 50
        report(
            "history page of 50 at 100,000 messages (HTTP GET), p50",
            statistics.median(lat),
            "ms",
            "<= 20 ms",
        )
        # kernels whose identities the links use
        n_kernels = 5
        links = []
        for _ in range(n_kernels):
            k = await asyncio.to_thread(call, port, "POST", "api/kernels", {"name": "python3"})
            cf = str(tmp / "runtime" / f"kernel-{k['id']}.json")
            ident = await asyncio.to_thread(kernel_identity, cf)
            assert ident is not None, cf
            rt = Sink()
            link = KernelLink(rt, f"http://127.0.0.1:{port}/", *ident)
            link.start()
            links.append((link, rt))
        for link, _ in links:
            await asyncio.wait_for(link.connected.wait(), 30)

        # 4. latency: one event at a time, kernel link -> server -> WebSocket client
        sid = (await asyncio.to_thread(call, port, "POST", "api/think/sessions", {}))["id"]
        ws = await ws_client(port, sid)
        for _ in range(2):
            await ws.read_message()  # sync, history
        link, rt = links[0]
        samples = []
        for i in range(300):
            t0 = time.perf_counter()
            link.push(
                {
                    "kind": "event",
                    "session_id": sid,
                    "run_id": None,
                    "event": {"type": "text_delta", "message_id": "m", "delta": str(i)},
                }
            )
            while True:
                frame = json.loads(await ws.read_message())
                if frame.get("delta") == str(i):
                    break
            samples.append((time.perf_counter() - t0) * 1000)
            await asyncio.sleep(0.002)
        ws.close()
        report(
            "kernel event -> WebSocket client latency, p50",
            statistics.median(samples),
            "ms",
            "<= 5 ms",
        )
        report(
            "kernel event -> WebSocket client latency, p95",
            sorted(samples)[int(len(samples) * 0.95)],
            "ms",
            "",
        )

        # 3. 50 sessions x 200 events/s, one WebSocket client each
        n_sessions, rate, seconds = 50, 200, (2 if quick else 5)
        sids = [
            (await asyncio.to_thread(call, port, "POST", "api/think/sessions", {}))["id"]
            for _ in range(n_sessions)
        ]
        clients = [await ws_client(port, s) for s in sids]
        for c in clients:  # subscribed and past the handshake (sync, history) before we start
            while json.loads(await c.read_message()).get("type") != "history":
                pass
        got = {s: 0 for s in sids}
        order_ok = {s: True for s in sids}

        async def read(s: str, c: Any) -> None:
            last = -1
            while True:
                msg = await c.read_message()
                if msg is None:
                    return
                frame = json.loads(msg)
                if frame.get("type") == "text_delta":
                    i = int(frame["delta"])
                    if i != last + 1 and os.environ.get("BENCH_DEBUG"):
                        print("gap", s, last, i, flush=True)
                    order_ok[s] &= i == last + 1
                    last = i
                    got[s] += 1

        readers = [asyncio.ensure_future(read(s, c)) for s, c in zip(sids, clients, strict=True)]
        total = n_sessions * rate * seconds
        t0 = loop.time()
        tick = 0.02  # 20 ms ticks: 4 events per session per tick
        per_tick = int(rate * tick)
        for step in range(int(seconds / tick)):
            for j, s in enumerate(sids):
                link, _ = links[j % n_kernels]
                for k in range(per_tick):
                    link.push(
                        {
                            "kind": "event",
                            "session_id": s,
                            "run_id": None,
                            "event": {
                                "type": "text_delta",
                                "message_id": "m",
                                "delta": str(step * per_tick + k),
                            },
                        }
                    )
            await asyncio.sleep(max(0.0, t0 + (step + 1) * tick - loop.time()))
        sent_for = time.perf_counter()
        deadline = loop.time() + 60
        while sum(got.values()) < total and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        drain = time.perf_counter() - sent_for
        lost = total - sum(got.values())
        report(
            f"{n_sessions} sessions x {rate} events/s x {seconds} s: events lost",
            lost,
            "events",
            "0",
        )
        report("  ... all in order per session", float(all(order_ok.values())), "bool", "1")
        report(
            "  ... delivered/s",
            sum(got.values()) / (seconds + drain),
            "events/s",
            f"{n_sessions * rate}",
        )
        report("  ... time to drain after the last event", drain * 1000, "ms", "")
        for c in clients:
            c.close()
        for r in readers:
            r.cancel()
        for link, _ in links:
            await link.close()
    finally:
        proc.terminate()
        proc.wait(10)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--start-only", action="store_true")
    args = parser.parse_args()
    if args.start_only:
        with tempfile.TemporaryDirectory() as d:
            bench_start(Path(d), 5)
        return
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(os.environ.get("BENCH_DIR") or d)  # BENCH_DIR keeps the server logs
        os.makedirs(tmp, exist_ok=True)
        await bench_store(tmp, args.quick)
        await bench_live(tmp, args.quick)
        bench_start(tmp, 2 if args.quick else 5)


if __name__ == "__main__":
    asyncio.run(main())
