"""What the approval gate costs a tool call that needs no approval, and how fast a decision
made elsewhere (the REST API, another process) reaches the waiting run.

    python bench/approvals.py [--quick]

(a) ``ApprovalGate.check`` for a call the policy lets through (``read_file`` in the default
    mode): one approvals lookup and the session's props, against a baseline in the same run:
    the tool call itself (``ToolRegistry.call`` of ``read_file`` on a small file).
(b) Decision latency: a run waits on a ``delete_file`` approval; the decision is written to
    the store as the server does (no nudge), and we time until the run's
    ``approval_resolved`` (the gate's store poll, ``poll`` = 1 s by default; the server
    also nudges the kernel over its link, which makes it immediate when the link is up).
    Baseline beside it: the same with the in-process nudge (what the cell's buttons do).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fake_model import FakeModel  # noqa: E402
from think_kernel.approvals import decide, decision_record  # noqa: E402
from think_kernel.config import ThinkConfig  # noqa: E402
from think_kernel.runtime import Runtime  # noqa: E402


def ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:.2f} ms"


async def gate_cost(rt: Runtime, n: int) -> tuple[list[float], list[float]]:
    assert rt.gate is not None
    (rt.workspace.root / "a.txt").write_text("hello\n")
    gate, tool = [], []
    for i in range(n):
        ctx = rt.make_context("m", f"c{i}")
        t0 = time.perf_counter()
        await rt.gate.check(
            rt.session_id, "m", f"c{i}", "read_file", '{"path": "a.txt"}', ctx.workspace, print
        )
        t1 = time.perf_counter()
        await rt.tools.call("read_file", {"path": "a.txt"}, ctx)
        t2 = time.perf_counter()
        gate.append(t1 - t0)
        tool.append(t2 - t1)
    return gate, tool


async def latency(rt: Runtime, fm: FakeModel, nudge: bool) -> float:
    assert rt.store is not None and rt.gate is not None
    (rt.workspace.root / "x.txt").write_text("x\n")
    fm.reply(tool_calls=[("delete_file", {"path": "x.txt"})])
    fm.reply(text="done")
    asked: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    resolved: asyncio.Future[float] = asyncio.get_running_loop().create_future()

    async def consume() -> None:
        async for ev in rt.run("delete x.txt"):
            if ev.type == "approval_requested" and not asked.done():
                asked.set_result(ev.id)  # type: ignore[attr-defined]
            if ev.type == "approval_resolved" and not resolved.done():
                resolved.set_result(time.perf_counter())

    task = asyncio.ensure_future(consume())
    aid = await asked
    await asyncio.sleep(0.05)
    row = await rt.store.get_approval(aid)
    assert row is not None
    t0 = time.perf_counter()
    await decide(rt.store, row, decision_record("approve", source="api"))
    if nudge:
        rt.gate.wake(aid)
    t1 = await resolved
    await task
    return t1 - t0


async def main(quick: bool) -> None:
    fm = FakeModel().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ws = Path(tmp) / "ws"
            ws.mkdir()
            cfg = ThinkConfig(base_url=fm.url, api_key="k", auto_title=False)
            rt = Runtime(cfg, ws, extensions=[])
            await rt.start()
            try:
                gate, tool = await gate_cost(rt, 50 if quick else 300)
                print(f"(a) gate check, no approval needed: median {ms(gate)}")
                print(f"    baseline read_file tool call:     median {ms(tool)}")
                ratio = statistics.median(gate) / statistics.median(tool)
                print(f"    ratio gate / tool call: {ratio:.2f}")
                runs = 3 if quick else 7
                polled = [await latency(rt, fm, False) for _ in range(runs)]
                nudged = [await latency(rt, fm, True) for _ in range(runs)]
                print(f"(b) decided elsewhere -> run resumes (store poll): {ms(polled)}")
                print(f"    with the link's nudge (baseline):               {ms(nudged)}")
            finally:
                await rt.close()
    finally:
        fm.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))
