"""Benchmarks of the agent's collaborative editing. Prints medians and baselines.

    python bench/collab.py            # everything (about a minute on 2 cores)
    python bench/collab.py --quick    # smaller counts

A real Jupyter server with jupyter-collaboration runs in this process (``ServerApp`` on the
asyncio loop, as the tests run it), so the agent's ``DocumentService`` edits the live rooms;
stand-in tabs are real pycrdt peers over the real room websocket (``tests/collab/peers.py``).

1. agent edit -> visible in another client (target p50 <= 5 ms); baseline: a human edit in one
   tab -> visible in another tab, through the same room
2. human edit -> seen by the agent (server-side document)
3. sequential agent edits per second (target >= 1,000), a tab connected
4. document and ystore size and load time after N agent edits (server rooms, and the
   standalone store ``think_kernel.collab.ystore``)

jupyter-ai 3.2.0 sends one Yjs update per token; a 200-token burst reaches the client
264 ms after the stream ends.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pycrdt import Doc, Text  # noqa: E402

from jupyter_ext.collab.documents import DocumentService  # noqa: E402
from jupyter_ext.collab.rooms import enable_room_nodelay  # noqa: E402
from tests.collab.peers import Peer  # noqa: E402
from think_kernel.collab.history import VersionLog  # noqa: E402
from think_kernel.store.location import store_dir  # noqa: E402

PEER_BURST_MS = 264  # jupyter-ai 3.2.0, measured side by side


def report(name: str, value: float, unit: str, note: str = "") -> None:
    """One result line."""
    print(f"{name:<58} {value:>10.2f} {unit:<8} {note}", flush=True)


def ms(samples: list[float]) -> tuple[float, float]:
    """Median and p95 of seconds, in ms."""
    s = sorted(samples)
    return statistics.median(s) * 1000, s[int(len(s) * 0.95) - 1] * 1000


def free_port() -> int:
    """A TCP port nobody listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def start_server(root: Path, data: Path) -> Any:
    """A ServerApp with jupyter-collaboration on this loop."""
    from jupyter_server.serverapp import ServerApp
    from traitlets.config import Config

    c = Config(
        {
            "ServerApp": {
                "jpserver_extensions": {
                    "jupyter_server_ydoc": True,
                    "jupyter_server_fileid": True,
                },
                "token": "",
                "password": "",
                "disable_check_xsrf": True,
            },
            "YDocExtension": {
                "document_save_delay": 1.0,
                "ystore_class": "jupyter_ext.collab.rooms.ThinkYStore",
            },
            "ThinkYStore": {"db_path": str(data / "ystore.db")},
            "BaseFileIdManager": {
                "root_dir": str(root),
                "db_path": str(data / "fileid.db"),
                "db_journal_mode": "OFF",
            },
        }
    )
    app = ServerApp.instance(
        port=free_port(),
        port_retries=0,
        open_browser=False,
        root_dir=str(root),
        config=c,
        allow_root=True,
        log_level="ERROR",
    )
    app.init_signal = lambda: None  # type: ignore[method-assign]
    app.initialize(argv=[], new_httpserver=True)
    app.start_app()
    enable_room_nodelay(app.web_app)
    return app


async def until(cond: Any, event: asyncio.Event, timeout: float = 10) -> None:
    """Wait on ``event`` until ``cond()`` holds."""

    async def loop() -> None:
        while not cond():
            event.clear()
            if cond():
                return
            await event.wait()

    await asyncio.wait_for(loop(), timeout)


async def bench_server(n_latency: int, n_rate: int, n_big: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-collab-"))
    root, data = tmp / "root", tmp / "data"
    root.mkdir()
    data.mkdir()
    (root / "a.py").write_text("")
    app = await start_server(root, data)
    service = DocumentService(app, VersionLog(data / "history.db"))
    base = f"http://127.0.0.1:{app.port}/"
    a, b = Peer(base, "a.py", "tab-a"), Peer(base, "a.py", "tab-b")
    await a.connect()
    await b.connect()
    print(f"server {base} (in-process, jupyter-collaboration, TCP_NODELAY rooms)\n")

    # 0. in-memory baseline: one pycrdt transaction applied to another Doc (no network)
    d1: Doc[Any] = Doc()
    d2: Doc[Any] = Doc()
    t1 = d1.get("source", type=Text)
    d2.get("source", type=Text)
    raw = []
    for i in range(n_latency):
        s = time.perf_counter()
        sv = d2.get_state()
        t1 += f"{i}\n"
        d2.apply_update(d1.get_update(sv))
        raw.append(time.perf_counter() - s)
    report("baseline: pycrdt edit -> other Doc, in memory, p50", ms(raw)[0], "ms")

    # 1a. baseline: tab A types -> tab B sees it, through the room
    human = []
    for i in range(n_latency):
        marker = f"h{i};"
        s = time.perf_counter()
        a.type_at(a.text(), len(str(a.text())), marker)
        await until(lambda m=marker: m in str(b.text()), b.changed)
        human.append(time.perf_counter() - s)
    p50, p95 = ms(human)
    report("baseline: tab -> tab through the room, p50", p50, "ms", f"(p95 {p95:.2f} ms)")

    # 1b. agent edit -> visible in tab B
    agent = []
    text = (await service.read_text("a.py"))["content"]
    for i in range(n_latency):
        marker = f"agent {i}\n"
        new = text + marker
        s = time.perf_counter()
        await service.write_text("a.py", new, base=text, action_id=f"lat{i}")
        await until(lambda m=marker: m in str(b.text()), b.changed)
        agent.append(time.perf_counter() - s)
        text = new
    p50, p95 = ms(agent)
    ratio = p50 / ms(human)[0]
    report(
        "agent edit -> visible in a tab, p50 (target <= 5)",
        p50,
        "ms",
        f"(p95 {p95:.2f} ms; {ratio:.2f}x tab->tab)",
    )

    # 2. human edit -> seen by the agent (the room's document, server side)
    doc = await service.document("a.py")
    seen = asyncio.Event()
    doc.ydoc.observe(lambda e: seen.set())
    src = doc.ydoc.get("source", type=Text)
    back = []
    for i in range(n_latency):
        marker = f"back{i};"
        s = time.perf_counter()
        a.type_at(a.text(), 0, marker)
        await until(lambda m=marker: m in str(src), seen)
        back.append(time.perf_counter() - s)
    p50, p95 = ms(back)
    report("human edit -> seen by the agent, p50", p50, "ms", f"(p95 {p95:.2f} ms)")

    # 3. sequential agent edits per second, tab B connected and receiving
    text = (await service.read_text("a.py"))["content"]
    s = time.perf_counter()
    for i in range(n_rate):
        new = text + f"r{i}\n"
        await service.write_text("a.py", new, base=text, action_id=f"r{i}")
        text = new
    rate = n_rate / (time.perf_counter() - s)
    await until(lambda: f"r{n_rate - 1}\n" in str(b.text()), b.changed, 30)
    report("sequential agent edits per second (target >= 1,000)", rate, "edit/s")
    # the same burst as jupyter-ai's 200 tokens: stream end -> complete at the client
    text = (await service.read_text("a.py"))["content"]
    new = text + "".join(f"tok{i} " for i in range(200))
    s = time.perf_counter()
    await service.write_text("a.py", new, base=text, action_id="burst")
    await until(lambda: "tok199 " in str(b.text()), b.changed)
    burst = (time.perf_counter() - s) * 1000
    report("200-token message -> complete at a tab", burst, "ms", f"(jupyter-ai {PEER_BURST_MS})")
    await a.close()
    await b.close()

    # 4. size and load time after n_big agent edits (a 50-line file, one line changed each)
    lines = [f"line {i} = 0\n" for i in range(50)]
    (root / "big.py").write_text("".join(lines))
    text = "".join(lines)
    s = time.perf_counter()
    for i in range(n_big):
        lines[i % 50] = f"line {i % 50} = {i}\n"
        new = "".join(lines)
        await service.write_text("big.py", new, base=text, action_id=f"b{i}")
        text = new
    rate = n_big / (time.perf_counter() - s)
    doc = await service.document("big.py")
    state = doc.ydoc.get_update()
    report(f"server: {n_big} edits of a 50-line file, edits/s", rate, "edit/s")
    report("server: document state size", len(state) / 1024, "KiB", f"(text {len(text)} B)")
    s = time.perf_counter()
    for _ in range(20):
        fresh: Doc[Any] = Doc()
        fresh.apply_update(state)
    report(
        "server: load the document state into a Doc", (time.perf_counter() - s) / 20 * 1000, "ms"
    )
    c = Peer(base, "big.py", "late-tab")
    s = time.perf_counter()
    await c.connect()
    report("server: a new tab joins and syncs", (time.perf_counter() - s) * 1000, "ms")
    assert str(c.text()) == text
    await c.close()
    await asyncio.sleep(1.5)  # the room's ystore writes are debounced; let them land
    for name in ("ystore.db", "history.db"):
        size = sum(p.stat().st_size for p in data.glob(name + "*"))
        report(f"server: {name} size (all rooms, WAL included)", size / 1024, "KiB")
    service.history.close()
    app.http_server.stop()
    await app._cleanup()


async def bench_standalone(n_big: int) -> None:
    from think_kernel.collab import local_access

    tmp = Path(tempfile.mkdtemp(prefix="bench-standalone-"))
    lines = [f"line {i} = 0\n" for i in range(50)]
    (tmp / "big.py").write_text("".join(lines))
    ws, notebooks = local_access(tmp)
    await ws.read_text("big.py")
    s = time.perf_counter()
    for i in range(n_big):
        ws.action_id = f"b{i}"
        lines[i % 50] = f"line {i % 50} = {i}\n"
        await ws.write_text("big.py", "".join(lines))
    rate = n_big / (time.perf_counter() - s)
    report(f"standalone: {n_big} edits (each a version + atomic file write)", rate, "edit/s")
    store = notebooks.documents.store
    st = store.stats("big.py")
    report(
        "standalone: update log + snapshots",
        (st["update_bytes"] + st["snapshot_bytes"]) / 1024,
        "KiB",
        f"({st['updates']} updates, {st['snapshots']} snapshots)",
    )
    state = store.state("big.py")
    report("standalone: latest state size", len(state) / 1024, "KiB")
    s = time.perf_counter()
    for _ in range(20):
        fresh: Doc[Any] = Doc()
        fresh.apply_update(store.state("big.py"))
    report("standalone: load latest (snapshot + tail)", (time.perf_counter() - s) / 20 * 1000, "ms")
    s = time.perf_counter()
    old: Doc[Any] = Doc()
    old.apply_update(store.state("big.py", n_big // 2))
    report("standalone: replay to the middle version", (time.perf_counter() - s) * 1000, "ms")
    await notebooks.aclose()
    size = sum(p.stat().st_size for p in store_dir(tmp).glob("ydocs.db*"))
    report("standalone: ydocs.db file size (checkpointed)", size / 1024, "KiB")
    s = time.perf_counter()
    ws, notebooks = local_access(tmp)
    await ws.write_text("big.py", "".join(lines) + "# reopened\n")
    report("standalone: reopen the store + first edit", (time.perf_counter() - s) * 1000, "ms")
    await notebooks.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts")
    args = parser.parse_args()
    n_latency, n_rate, n_big = (50, 300, 1000) if args.quick else (200, 1000, 10_000)
    os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")
    logging.disable(logging.WARNING)  # the server's info lines would bury the numbers
    await bench_server(n_latency, n_rate, n_big)
    print()
    await bench_standalone(n_big)


if __name__ == "__main__":
    asyncio.run(main())
