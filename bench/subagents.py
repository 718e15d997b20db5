"""Subagents run in parallel: 4 at once against 1 alone, same run.

    python bench/subagents.py [--quick] [--tool list_files|execute_code]

The model is the scripted HTTP server of tests/fake_model.py. Every subagent step takes the
model 1 s (``first_delay``), and each subagent takes 3 steps (two tool calls, then its
answer); the parent's own steps are instant. A request delegates 4 subagents at once and
waits for them; the baseline, measured in the same run, is a request that delegates 1.

Printed: the wall time of the 4 (first spawn to last result) next to the 1 alone and their
ratio (target: at most 1.3, i.e. parallel, not serial), and each subagent's overhead outside
the model: its wall time minus the time its model requests took (HTTP spans at the fake
server), in ms, medians over the subagents and trials. ``--tool execute_code`` makes each
tool call run Python in the subagent's own warm sandbox worker (the first call starts it).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fake_model import FakeModel  # noqa: E402
from think_kernel.config import ThinkConfig  # noqa: E402
from think_kernel.runtime import Runtime  # noqa: E402

STEP_SECONDS = 1.0
TARGET = 1.3


def _script(fm: FakeModel, keys: list[str], tool: str) -> None:
    """The parent delegates one subagent per key, waits, answers; each subagent takes 3
    steps of ``STEP_SECONDS``."""
    fm.reply(
        tool_calls=[
            ("delegate_to_subagent", {"task": f"{key} job", "instructions": "do the job"})
            for key in keys
        ]
    )
    fm.reply(tool_calls=[("wait_for_subagents", {})])
    fm.reply(text="done")
    args = {"path": "."} if tool == "list_files" else {"code": "x = sum(range(1000))"}
    for key in keys:
        fm.reply_for(key, first_delay=STEP_SECONDS, tool_calls=[(tool, args)])
        fm.reply_for(key, first_delay=STEP_SECONDS, tool_calls=[(tool, args)])
        fm.reply_for(key, first_delay=STEP_SECONDS, text=f"{key} finished")


async def one_request(rt: Runtime, fm: FakeModel, n: int, tool: str) -> dict[str, Any]:
    """Delegate ``n`` subagents; return their wall time and per-subagent overheads."""
    keys = [f"SUB{n}x{i}-{time.monotonic_ns()}" for i in range(n)]
    fm.reset()
    _script(fm, keys, tool)
    start: dict[str, float] = {}  # task id -> when it was spawned
    end: dict[str, float] = {}
    key_of: dict[str, str] = {}

    def sink(event: Any) -> None:
        frame = event.to_dict()
        if frame["type"] == "subagent_spawned":
            start[frame["task_id"]] = time.time()
            key_of[frame["task_id"]] = frame["title"].split()[0]
        elif frame["type"] == "subagent_complete":
            end[frame["task_id"]] = time.time()
        elif frame["type"] == "subagent_error":
            raise RuntimeError(f"a subagent failed: {frame}")

    rt.add_sink(sink)
    try:
        events = [e async for e in rt.run(f"delegate {n}")]
    finally:
        rt.remove_sink(sink)
    if events[-2].type != "chat" or len(end) != n:
        raise RuntimeError(f"the request did not finish: {events[-3:]}")
    walls, overheads = [], []
    for task_id, key in key_of.items():
        model = sum(s["end"] - s["start"] for s in fm.spans if s["key"] == key)
        walls.append((start[task_id], end[task_id]))
        overheads.append((end[task_id] - start[task_id] - model) * 1000)
    wall = max(e for _, e in walls) - min(s for s, _ in walls)
    return {"wall": wall, "overheads": overheads}


async def measure(trials: int, tool: str) -> dict[str, Any]:
    """Alternate 1-alone and 4-at-once requests in one runtime; collect the figures."""
    fm = FakeModel().start()
    fm.barrier_timeout = 60
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cfg = ThinkConfig(
                base_url=fm.url,
                api_key="bench",
                primary_model="bench-primary",
                fast_model="bench-fast",
                auto_title=False,
            )
            (Path(tmp) / "ws").mkdir()
            rt = Runtime(cfg, Path(tmp) / "ws", extensions=[])
            await rt.start()
            try:
                await one_request(rt, fm, 1, tool)  # warm-up: imports, first sandbox start
                alone, four = [], []
                for _ in range(trials):
                    alone.append(await one_request(rt, fm, 1, tool))
                    four.append(await one_request(rt, fm, 4, tool))
            finally:
                await rt.close()
    finally:
        fm.stop()
    return {"alone": alone, "four": four}


def report(result: dict[str, Any], tool: str) -> None:
    """Print the table."""
    alone = statistics.median(r["wall"] for r in result["alone"])
    four = statistics.median(r["wall"] for r in result["four"])
    over_alone = statistics.median(o for r in result["alone"] for o in r["overheads"])
    over_four = statistics.median(o for r in result["four"] for o in r["overheads"])
    ratio = four / alone
    print(f"Subagents: 3 steps each, the model takes {STEP_SECONDS:g} s per step; tool: {tool}")
    print(f"{'':34} {'4 at once':>12} {'1 alone':>12} {'ratio':>8} {'target':>8}")
    print(f"{'wall time (s, median)':34} {four:12.2f} {alone:12.2f} {ratio:8.2f} {TARGET:8.2f}")
    print(
        f"{'overhead per subagent (ms, median)':34} {over_four:12.1f} {over_alone:12.1f}"
        f" {'':>8} {'':>8}"
    )
    verdict = "parallel" if ratio <= TARGET else "NOT parallel enough"
    print(f"-> {verdict}: 4 subagents take {ratio:.2f} x the time of one")


def main() -> None:
    """Run and print."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 trial instead of 3")
    parser.add_argument("--tool", choices=("list_files", "execute_code"), default="list_files")
    args = parser.parse_args()
    result = asyncio.run(measure(1 if args.quick else 3, args.tool))
    report(result, args.tool)


if __name__ == "__main__":
    main()
