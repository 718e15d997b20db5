"""Time travel: what a checkpoint costs per turn, how the store grows, how fast a rewind
reaches the open tabs.

    python bench/rewind.py            # everything (about a minute on 2 cores)
    python bench/rewind.py --quick    # smaller counts

1. Checkpoint cost per turn, recorder only (``think_kernel/checkpoints/recorder.py``): a turn
   opens its checkpoint, a file tool changes one 20 KB file (state before and after), the
   turn ends. In a 10-file workspace and in a 1,000-file, 200 MB one (the baseline of the same
   run): the target is <= 5 ms and the same in both. Also the same change made by sandboxed
   code, with the file watch the kernel uses and the small files copied ahead when it started
   (bringing what is remembered up to date from the watch's events before the run, the step
   after it); the watch itself is not counted (it runs for every sandboxed run, checkpoints
   or not). The copy ahead is paid once per session, when its watch starts: its time and
   size are printed too.
2. Store growth over 100 turns that each change one line of that file: database and
   checkpoint blobs, per turn, beside the file's size (blobs are whole contents, shared when
   equal, not deltas).
3. "Restore files" to before a turn that changed 20 files, each open in a tab (a real pycrdt
   peer over the room websocket of an in-process Jupyter server with jupyter-collaboration):
   time until every tab shows the restored text (target <= 300 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from think_kernel.checkpoints import CheckpointConfig, Checkpoints, around_tool  # noqa: E402
from think_kernel.checkpoints.rewind import rewind  # noqa: E402
from think_kernel.collab.watch import InotifyWatcher  # noqa: E402
from think_kernel.store import Store  # noqa: E402
from think_kernel.tools.workspace import LocalWorkspace  # noqa: E402

FILE = "src/module.py"
FILE_BYTES = 20_000


def report(name: str, value: float, unit: str, note: str = "") -> None:
    """One result line."""
    print(f"{name:<62} {value:>10.2f} {unit:<6} {note}", flush=True)


def pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(len(s) * q))]


def make_workspace(root: Path, files: int, total_mb: int) -> None:
    """``files`` files of ``total_mb`` MB in all, in folders of 100, and the changed file."""
    size = total_mb * 2**20 // files
    block = os.urandom(size)
    for i in range(files):
        folder = root / f"data{i // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.bin").write_bytes(block[:-8] + i.to_bytes(8, "little"))
    (root / "src").mkdir(exist_ok=True)
    (root / FILE).write_text(_content(0))


def _content(turn: int) -> str:
    lines = [f"value_{i} = {i}  # a line of the module, long enough" for i in range(400)]
    lines[turn % 400] = f"value_{turn % 400} = {turn}  # changed by turn {turn}"
    text = "\n".join(lines) + "\n"
    return text[:FILE_BYTES]


async def turn_costs(
    root: Path, turns: int
) -> tuple[list[float], list[float], Path, tuple[str, int]]:
    """Recorder time per turn: by a file tool, and by sandboxed code; and the copy ahead."""
    store_path = root.parent / f"{root.name}-store" / "think.db"
    store = await Store.open(store_path)
    cps = Checkpoints(LocalWorkspace(root, private=[]), store, CheckpointConfig())
    sid = (await store.create_session())["id"]
    watcher = InotifyWatcher(root)
    await watcher.start()
    s = time.perf_counter()
    cps.watching(watcher)
    await cps.prefetched()
    ahead = time.perf_counter() - s
    copied = folder_bytes(store_path.parent / "checkpoints")
    prefetch = f"{ahead * 1000:.0f} ms, {len(cps._known)} files, {copied / 2**20:.1f} MiB"
    tool, code = [], []
    for t in range(1, turns + 1):
        msg = (await store.add_message(sid, "user", f"turn {t}"))["id"]
        s = time.perf_counter()
        await cps.begin(sid, msg)
        await around_tool(cps, "edit_file", {"path": FILE}, done=False)
        spent = time.perf_counter() - s
        (root / FILE).write_text(_content(t))
        s = time.perf_counter()
        await around_tool(cps, "edit_file", {"path": FILE}, done=True)
        await cps.end()
        tool.append(spent + time.perf_counter() - s)
    for t in range(turns + 1, 2 * turns + 1):
        msg = (await store.add_message(sid, "user", f"turn {t}"))["id"]
        s = time.perf_counter()
        await cps.begin(sid, msg)
        seen = await cps.before_run()
        spent = time.perf_counter() - s
        mark = await watcher.mark()
        (root / FILE).write_text(_content(t))
        changes = await watcher.since(mark)
        s = time.perf_counter()
        await cps.after_run(seen, changes)
        await cps.end()
        code.append(spent + time.perf_counter() - s)
    watcher.close()
    await store.close()
    return tool, code, store_path.parent, (prefetch, copied)


def folder_bytes(folder: Path) -> int:
    """Bytes of every file below a folder."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


async def bench_costs(turns: int, big_mb: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-rewind-"))
    small, big = tmp / "small", tmp / "big"
    make_workspace(small, 10, 2)
    make_workspace(big, 1000, big_mb)
    print(f"workspaces: 10 files / 2 MB, and 1,000 files / {big_mb} MB; one {FILE_BYTES} B file")
    print("changed per turn\n")
    # Warm up (imports, first blobs), then measure each, alternating the order once.
    warm = tmp / "warm"
    make_workspace(warm, 2, 1)
    await turn_costs(warm, 3)
    s_tool, s_code, _, s_ahead = await turn_costs(small, turns)
    b_tool, b_code, big_store, b_ahead = await turn_costs(big, turns)
    print(f"copied ahead when the watch started: 10-file {s_ahead[0]}; 1,000-file {b_ahead[0]}\n")
    for name, sm, bg in (("file tool", s_tool, b_tool), ("sandboxed code", s_code, b_code)):
        s50, b50 = statistics.median(sm) * 1000, statistics.median(bg) * 1000
        report(f"checkpoint per turn, {name}, 10-file workspace, p50", s50, "ms")
        report(
            f"checkpoint per turn, {name}, 1,000-file {big_mb} MB, p50 (<= 5)",
            b50,
            "ms",
            f"(p95 {pct(bg, 0.95) * 1000:.2f} ms; {b50 / s50:.2f}x the 10-file one)",
        )
    # Store growth: the big workspace's store after its 2 x turns.
    # The copy ahead is paid once, when the session's watch starts: not a turn's growth.
    ahead = b_ahead[1]
    db = sum(folder_bytes(p) if p.is_dir() else p.stat().st_size for p in big_store.iterdir())
    db -= ahead
    blobs = folder_bytes(big_store / "checkpoints") - ahead
    report(f"store after {2 * turns} turns (database + checkpoint blobs, less the copy ahead)",
           db / 1024, "KiB")  # fmt: skip
    report(
        "store growth per turn",
        db / (2 * turns) / 1024,
        "KiB",
        f"(blobs {blobs / (2 * turns) / 1024:.1f} KiB; the file is {FILE_BYTES / 1024:.1f} KiB)",
    )


def _collab() -> Any:
    spec = importlib.util.spec_from_file_location("bench_collab", REPO / "bench" / "collab.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class RoomWorkspace(LocalWorkspace):
    """The workspace as the kernel sees it when a server runs: files as their rooms hold
    them (here read from the server's document service in the same process)."""

    def __init__(self, root: Path, service: Any) -> None:
        super().__init__(root, private=[])
        self.service = service

    async def snapshot(self, path: str) -> bytes | None:
        """The room's text."""
        if not (self.root / path).exists():
            return None
        return str((await self.service.read_text(path))["content"]).encode()


class Rooms:
    """The server's rooms as a rewind's file access."""

    def __init__(self, service: Any) -> None:
        self.service = service

    async def current(self, path: str) -> tuple[bytes | None, str | None]:
        text = str((await self.service.read_text(path))["content"])
        return text.encode(), text

    async def write(self, path: str, content: str, base: str | None) -> None:
        await self.service.write_text(path, content, base=base, action_id="rewind")

    async def delete(self, path: str) -> None:
        await self.service.delete(path, action_id="rewind")


async def bench_restore(files: int, repeats: int) -> None:
    from jupyter_ext.collab.documents import DocumentService
    from tests.collab.peers import Peer
    from think_kernel.collab.history import VersionLog

    collab = _collab()
    tmp = Path(tempfile.mkdtemp(prefix="bench-rewind-rooms-"))
    root, data = tmp / "root", tmp / "data"
    root.mkdir()
    data.mkdir()
    names = [f"f{i}.py" for i in range(files)]
    for n in names:
        (root / n).write_text(_content(0))
    app = await collab.start_server(root, data)
    service = DocumentService(app, VersionLog(data / "history.db"))
    base = f"http://127.0.0.1:{app.port}/"
    tabs = [Peer(base, n, f"tab{i}") for i, n in enumerate(names)]
    for tab in tabs:
        await tab.connect()
    store = await Store.open(data / "think" / "think.db")
    cps = Checkpoints(RoomWorkspace(root, service), store)
    sid = (await store.create_session())["id"]
    took = []
    for r in range(1, repeats + 1):
        msg = (await store.add_message(sid, "user", f"change {r}"))["id"]
        await cps.begin(sid, msg)
        for n in names:
            await around_tool(cps, "write_file", {"path": n}, done=False)
            now = str((await service.read_text(n))["content"])
            await service.write_text(n, _content(r), base=now, action_id=f"w{r}")
            await around_tool(cps, "write_file", {"path": n}, done=True)
        await cps.end()
        want = _content(r - 1)
        left = _content(r)
        for tab in tabs:
            await collab.until(lambda t=tab, x=left: str(t.text()) == x, tab.changed)
        s = time.perf_counter()
        out = await rewind(store, Rooms(service), sid, msg, "files")
        for tab in tabs:
            await collab.until(lambda t=tab, x=want: str(t.text()) == x, tab.changed)
        took.append(time.perf_counter() - s)
        assert len(out["restored"]) == files and not out["conflicts"], out
        # Put the files back as the turn left them, for the next round.
        for n in names:
            now = str((await service.read_text(n))["content"])
            await service.write_text(n, _content(r), base=now, action_id=f"again{r}")
    p50 = statistics.median(took) * 1000
    report(
        f"'Restore files' of {files} files -> every open tab updated, p50 (<= 300)",
        p50,
        "ms",
        f"(p95 {pct(took, 0.95) * 1000:.1f} ms over {repeats})",
    )
    for tab in tabs:
        await tab.close()
    await store.close()
    service.history.close()
    app.http_server.stop()
    await app._cleanup()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts")
    args = parser.parse_args()
    logging.getLogger().setLevel(logging.ERROR)
    turns, big_mb, repeats = (20, 50, 3) if args.quick else (50, 200, 10)
    await bench_costs(turns, big_mb)
    print()
    await bench_restore(20, repeats)


def run() -> None:
    """Run in a temporary folder removed at the end (the 200 MB workspace with it)."""
    with tempfile.TemporaryDirectory(prefix="bench-rewind-") as tmp:
        tempfile.tempdir = tmp
        try:
            asyncio.run(main())
        finally:
            tempfile.tempdir = None


if __name__ == "__main__":
    run()
