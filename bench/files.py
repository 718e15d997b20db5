"""One truth for files: what keeping disk and rooms in step costs, and whether
write-then-run is exact at scale. Prints medians and a baseline measured in the same run.

    python bench/files.py            # everything (a couple of minutes on 2 cores)
    python bench/files.py --quick    # smaller counts (100 pairs)

A real ``jupyter server`` (subprocess) with jupyter-collaboration and the Think extension;
the kernel side of the link is the production ``KernelLink`` in this process, with the
identity of a real kernel the server started; tabs are real pycrdt peers
(``tests/collab/peers.py``); the model is ``tests/fake_model.py``.

1. ``doc.flush`` when nothing is dirty, kernel -> server -> kernel (target <= 5 ms), with 1 and
   20 rooms open; baseline: ``doc.read`` of a one-line file over the same link.
2. the workspace watch per sandboxed run (mark + changes) on a 5,000-file workspace: inotify
   (what runs on Linux) next to a stat snapshot (the fallback elsewhere).
3. 500 alternating write_file / edit_file -> ``bash cat`` pairs through the chat (real think
   kernel, real sandbox) with the file open in a live Yjs client: stale reads (target 0).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.collab.peers import Peer  # noqa: E402
from tests.fake_model import FakeModel  # noqa: E402
from think_kernel.collab.watch import InotifyWatcher, SnapshotWatcher  # noqa: E402
from think_kernel.kernel.link import KernelLink, kernel_identity  # noqa: E402

TOKEN = "bench-files-token"


def report(name: str, value: float, unit: str, note: str = "") -> None:
    """One result line."""
    print(f"{name:<66} {value:>10.2f} {unit:<6} {note}", flush=True)


def free_port() -> int:
    """A TCP port nobody listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``jupyter server`` with the Think extension, in its own process."""

    def __init__(self, tmp: Path, model_url: str) -> None:
        self.tmp = tmp
        self.root = tmp / "root"
        self.root.mkdir()
        data = tmp / "data"
        spec = data / "kernels" / "think"
        spec.mkdir(parents=True)
        (spec / "kernel.json").write_text(
            json.dumps(
                {
                    "argv": [sys.executable, "-m", "think_kernel", "-f", "{connection_file}"],
                    "display_name": "Think",
                    "language": "markdown",
                    "env": {"PYTHONPATH": str(REPO)},
                }
            )
        )
        self.port = free_port()
        self.env = {
            **os.environ,
            "JUPYTER_DATA_DIR": str(data),
            "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
            "JUPYTER_PATH": str(data),
            "PYTHONPATH": str(REPO),
            "OPENAI_BASE_URL": model_url,
            "OPENAI_API_KEY": "bench",
            "THINK_MODEL": "fake",
        }
        self.log = open(tmp / "server.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyter_server",
                "--allow-root",
                "--no-browser",
                f"--port={self.port}",
                "--ServerApp.port_retries=0",
                "--ServerApp.ip=127.0.0.1",
                f"--IdentityProvider.token={TOKEN}",
                f"--ServerApp.root_dir={self.root}",
                "--ServerApp.jpserver_extensions",
                "jupyter_ext=True",
            ],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            start_new_session=True,
        )
        self.url = f"http://127.0.0.1:{self.port}/"

    def call(self, method: str, path: str, body: Any = None) -> Any:
        req = urllib.request.Request(
            self.url + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {TOKEN}"},
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            text = resp.read().decode()
        return json.loads(text) if text else None

    def wait_up(self) -> None:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            try:
                self.call("GET", "api/think/sessions")
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        raise RuntimeError("server did not start")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Sink:
    """A runtime stand-in on the kernel side of the link."""

    session_id = ""

    def add_sink(self, sink: Any) -> None:
        """Events are not used here."""


async def rpc_median(link: KernelLink, method: str, params: dict[str, Any], n: int) -> float:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        out = await link.request(method, params)
        samples.append(time.perf_counter() - t0)
        assert "error" not in out, out
    return statistics.median(samples) * 1000


async def bench_flush(server: Server, n: int) -> None:
    kernel = await asyncio.to_thread(server.call, "POST", "api/kernels", {"name": "python3"})
    ident = kernel_identity(str(server.tmp / "runtime" / f"kernel-{kernel['id']}.json"))
    assert ident is not None
    link = KernelLink(Sink(), server.url, *ident)
    link.start()
    await asyncio.wait_for(link.connected.wait(), 30)
    peers = []
    try:
        for i in range(20):
            (server.root / f"open{i}.txt").write_text(f"file {i}\n")
        for i in range(1, 21):
            peer = Peer(server.url, f"open{i - 1}.txt", f"tab{i}")
            await connect(peer)
            peers.append(peer)
            if i in (1, 20):
                await link.request("doc.flush", {"path": "."})  # settle
                read = await rpc_median(link, "doc.read", {"path": "open0.txt"}, n)
                flush = await rpc_median(link, "doc.flush", {"path": "."}, n)
                report(
                    f"doc.flush, nothing dirty, {i} room(s) open, p50",
                    flush,
                    "ms",
                    f"target <= 5 ms; baseline doc.read {read:.2f} ms, ratio {flush / read:.2f}",
                )
        # one dirty room: what a flush that writes costs
        samples = []
        for _ in range(max(20, n // 5)):
            peers[0].type_at(peers[0].text(), 0, "x")
            await asyncio.sleep(0.01)
            t0 = time.perf_counter()
            out = await link.request("doc.flush", {"path": "."})
            samples.append(time.perf_counter() - t0)
            assert out["saved"] in ([], ["open0.txt"]), out
        report(
            "doc.flush with one dirty room (it is saved), p50",
            statistics.median(samples) * 1000,
            "ms",
        )
    finally:
        for peer in peers:
            await peer.close()
        await link.close()


async def connect(peer: Peer) -> None:
    """Join a room like ``Peer.connect``, with the token the bench server requires."""
    import httpx
    from pycrdt import Provider
    from websockets.asyncio.client import connect as ws_connect

    from tests.collab.peers import WsChannel

    fmt, kind = ("json", "notebook") if peer.notebook else ("text", "file")
    async with httpx.AsyncClient(headers={"Authorization": f"token {TOKEN}"}) as http:
        r = await http.put(
            f"{peer.base_url}api/collaboration/session/{peer.path}",
            json={"format": fmt, "type": kind},
        )
        r.raise_for_status()
        data = r.json()
    peer.room = f"{data['format']}:{data['type']}:{data['fileId']}"
    url = peer.base_url.replace("http://", "ws://")
    url = f"{url}api/collaboration/room/{peer.room}?sessionId={data['sessionId']}&token={TOKEN}"
    peer._ws = await ws_connect(url, max_size=None)
    peer._provider = Provider(peer.doc.ydoc, WsChannel(peer._ws, peer.room, peer.awareness))
    peer._task = asyncio.create_task(peer._provider.start())
    await asyncio.wait_for(peer._provider.synced.wait(), 10)


async def bench_watch(tmp: Path, n: int) -> None:
    root = tmp / "watched"
    for d in range(100):
        folder = root / f"pkg{d}"
        folder.mkdir(parents=True)
        for f in range(50):
            (folder / f"m{f}.py").write_text("x = 1\n")
    watchers: list[tuple[str, Any]] = [
        ("inotify", InotifyWatcher(root)),
        ("stat snapshot", SnapshotWatcher(root)),
    ]
    for name, watcher in watchers:
        t0 = time.perf_counter()
        await watcher.start()
        setup = (time.perf_counter() - t0) * 1000
        samples = []
        for i in range(n):
            t0 = time.perf_counter()
            mark = await watcher.mark()
            (root / "pkg7" / f"{name[:4]}{i}.txt").write_text("y")  # the "run"
            changes = await watcher.since(mark)
            samples.append(time.perf_counter() - t0)
            assert changes.created == [f"pkg7/{name[:4]}{i}.txt"], changes
        watcher.close()
        report(
            f"watch per run, 5,000 files / 100 folders, {name}, p50",
            statistics.median(samples) * 1000,
            "ms",
            f"setup {setup:.0f} ms",
        )


async def bench_pairs(server: Server, model: FakeModel, pairs: int) -> None:
    (server.root / "fresh.txt").write_text("start\n")
    peer = Peer(server.url, "fresh.txt", "human")
    await connect(peer)
    session = await asyncio.to_thread(server.call, "POST", "api/think/sessions", {"title": "b"})
    sid = session["id"]
    # warm the kernel and its sandbox first (not part of the pairs)
    model.reply(tool_calls=[("bash", {"command": "true"})])
    model.reply(tool_calls=[("read_file", {"path": "fresh.txt"})])
    model.reply(text="ready")
    expected, previous = [], "start"
    path = f"api/think/sessions/{sid}"
    per_message = 9  # 2 steps a pair: 9 pairs and the answer fit the default 20-step limit
    messages = 1  # the warm-up
    for i in range(pairs):
        line = f"version {i} {uuid.uuid4().hex[:6]}"
        if i % 2 == 0:
            call = ("write_file", {"path": "fresh.txt", "content": f"{line}\n"})
        else:
            call = ("edit_file", {"path": "fresh.txt", "old_string": previous, "new_string": line})
        model.reply(tool_calls=[call])
        model.reply(tool_calls=[("bash", {"command": "cat fresh.txt"})])
        expected.append(line)
        previous = line
        if (i + 1) % per_message == 0 or i == pairs - 1:
            model.reply(text="done")
            messages += 1
    t0 = time.perf_counter()
    # Sent at once: the session runs them one after another (the others wait, queued).
    for k in range(messages):
        await asyncio.to_thread(server.call, "POST", f"{path}/messages", {"content": f"go {k}"})
    while True:
        state = await asyncio.to_thread(server.call, "GET", path)
        if state["run"] is None and not state["queued"]:
            break
        await asyncio.sleep(0.2)
        if time.perf_counter() - t0 > 1800:
            raise RuntimeError("the runs did not finish")
    elapsed = time.perf_counter() - t0
    events = []
    after = 0
    while True:
        query = f"{path}/events?after={after}&limit=5000"
        page = await asyncio.to_thread(server.call, "GET", query)
        batch = page["events"]
        if not batch:
            break
        events += batch
        after = batch[-1]["seq"]
    cats = [e["data"] for e in events if e["type"] == "tool_result" and e["data"]["name"] == "bash"]
    cats = cats[1:]  # the warm-up
    stale = sum(1 for i, c in enumerate(cats) if not c["output"].startswith(expected[i]))
    report("write/edit -> bash cat pairs run through the chat", len(cats), "pairs")
    report("stale reads (cat showed older content)", stale, "", "target 0")
    report("time per pair (2 model steps, 2 tools, flush + merge)", elapsed / pairs * 1000, "ms")
    failed = [e["data"] for e in events if e["type"] == "task_failed"]
    if len(cats) != pairs or failed:
        print(f"  note: {pairs - len(cats)} pairs did not run; failed runs: {failed}")
    await peer.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-files-"))
    model = FakeModel().start()
    server = Server(tmp, model.url)
    try:
        await asyncio.to_thread(server.wait_up)
        print(f"server {server.url} (jupyter-collaboration + Think, subprocess)\n")
        await bench_flush(server, 50 if args.quick else 200)
        await bench_watch(tmp, 20 if args.quick else 100)
        await bench_pairs(server, model, 100 if args.quick else 500)
    finally:
        server.stop()
        model.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
