"""Review mode: how fast an accepted proposal reaches the open tabs.

    python bench/review.py            # 10 rounds
    python bench/review.py --quick    # 3 rounds

A proposal that changes 10 files, each open in a tab (a real pycrdt peer over the room
websocket of an in-process Jupyter server with jupyter-collaboration), is accepted whole
(``think_kernel.proposals.decide``: three-way plans, written through the rooms, recorded as
checkpoint steps and an action-log row): time until every tab shows the accepted text
(target <= 300 ms). Beside it, in the same run, the same 10 edits made without review mode
(one room write per file, as the file tools make them).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from think_kernel.proposals import Proposal  # noqa: E402
from think_kernel.proposals.decide import decide  # noqa: E402
from think_kernel.store import Store  # noqa: E402

FILES = 10


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _content(r: int, i: int) -> str:
    lines = [f"value_{k} = {k}  # a line of module {i}" for k in range(300)]
    lines[(r * 7) % 300] = f"value = {r}  # round {r}"
    return "\n".join(lines) + "\n"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 10")
    args = parser.parse_args()
    logging.getLogger().setLevel(logging.ERROR)
    rounds = 3 if args.quick else 10
    from jupyter_ext.collab.documents import DocumentService
    from tests.collab.peers import Peer
    from think_kernel.collab.history import VersionLog

    collab, rewind = _load("collab"), _load("rewind")
    tmp = Path(tempfile.mkdtemp(prefix="bench-review-"))
    root, data = tmp / "root", tmp / "data"
    root.mkdir()
    data.mkdir()
    names = [f"m{i}.py" for i in range(FILES)]
    for i, n in enumerate(names):
        (root / n).write_text(_content(0, i))
    app = await collab.start_server(root, data)
    service = DocumentService(app, VersionLog(data / "history.db"))
    tabs = [Peer(f"http://127.0.0.1:{app.port}/", n, f"tab{i}") for i, n in enumerate(names)]
    for tab in tabs:
        await tab.connect()
    store = await Store.open(data / "think" / "think.db")
    sid = (await store.create_session(options={"review": True}))["id"]
    proposal = Proposal(store, sid)
    rooms = rewind.Rooms(service)

    async def shown(r: int) -> None:
        for i, tab in enumerate(tabs):
            want = _content(r, i)
            await collab.until(lambda t=tab, x=want: str(t.text()) == x, tab.changed)

    accepted, direct = [], []
    r = 0
    for _ in range(rounds):
        # Review mode: propose (not timed), then accept all.
        r += 1
        for i, n in enumerate(names):
            now = str((await service.read_text(n))["content"])
            await proposal.write(n, _content(r, i).encode(), now.encode())
        s = time.perf_counter()
        out = await decide(proposal, rooms, accept="all")
        await shown(r)
        accepted.append(time.perf_counter() - s)
        assert len(out["accepted"]) == FILES and not out["conflicts"], out
        # Without review mode: the same kind of edit, straight to the rooms.
        r += 1
        s = time.perf_counter()
        for i, n in enumerate(names):
            now = str((await service.read_text(n))["content"])
            await service.write_text(n, _content(r, i), base=now, action_id=f"w{r}")
        await shown(r)
        direct.append(time.perf_counter() - s)
    a50, d50 = statistics.median(accepted) * 1000, statistics.median(direct) * 1000
    collab.report(
        f"accept a {FILES}-file proposal -> every open tab updated, p50 (<= 300)",
        a50,
        "ms",
        f"(max {max(accepted) * 1000:.1f} ms over {rounds})",
    )
    collab.report(
        f"the same {FILES} edits without review mode, p50",
        d50,
        "ms",
        f"(accept is {a50 / d50:.2f}x)",
    )
    for tab in tabs:
        await tab.close()
    await store.close()
    service.history.close()
    app.http_server.stop()
    await app._cleanup()


if __name__ == "__main__":
    asyncio.run(main())
