"""What five registered no-op lifecycle hooks add to an agent step.

    python bench/hooks.py [--quick]

(a) Dispatch: the hook calls of one step (one model call, one tool call: ``before_model``,
    ``before_tool``, ``after_tool``) through :class:`~think_kernel.hooks.HookRunner`, with
    five hooks that define every method and answer None, timed over many steps; next to the
    same calls with no hooks registered.
(b) In the loop: the wall time of a step of the real Runtime (an in-process model that answers
    at once with one call of a trivial tool, as in ``bench/agent_overhead.py``), with the five
    hooks and without, in alternating runs; medians, and their difference. The step includes
    SQLite commits, so (b) is noisier than the difference it shows: (a) is the precise figure.
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

from bench.agent_overhead import BenchRuntime, InstantModel  # noqa: E402
from think_kernel.agent.events import StatusEvent  # noqa: E402
from think_kernel.config import ThinkConfig  # noqa: E402
from think_kernel.hooks import (  # noqa: E402
    Hook,
    HookRunner,
    ModelCall,
    ModelChange,
    ResultChange,
    RunEnd,
    ToolUse,
    ToolVerdict,
)
from think_kernel.layers import AgentExtension  # noqa: E402
from think_kernel.tools.base import ToolOutput  # noqa: E402


class Noop(Hook):
    """Defines every method; says nothing."""

    async def before_model(self, call: ModelCall) -> ModelChange | None:
        return None

    async def before_tool(self, call: ToolUse) -> ToolVerdict | None:
        return None

    async def after_tool(self, call: ToolUse, output: ToolOutput) -> ResultChange | None:
        return None

    async def run_end(self, run: RunEnd) -> None:
        return None


def five() -> list[Hook]:
    hooks = [Noop() for _ in range(5)]
    for i, h in enumerate(hooks):
        h.name = f"noop{i}"  # type: ignore[misc]
    return hooks


async def dispatch(runner: HookRunner, steps: int) -> float:
    """Microseconds of hook dispatch per step (median of 7 batches)."""
    call = ModelCall("s", 1, "primary", "m", "request", "/ws")
    use = ToolUse("s", "c1", "noop", {"note": ""}, "/ws")
    out = ToolOutput("ok")
    batches = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(steps):
            await runner.before_model(call)
            await runner.before_tool(use)
            await runner.after_tool(use, out)
        batches.append((time.perf_counter() - t0) / steps * 1e6)
    return statistics.median(batches)


class Hooked(AgentExtension):
    """The five no-op hooks, as an extension registers them."""

    hooks = five()


async def step_times(steps: int, ws: Path, hooked: bool) -> list[float]:
    cfg = ThinkConfig(base_url="http://unused", api_key="k", max_steps=steps + 2)
    rt = BenchRuntime(cfg, ws, model=InstantModel(steps), extensions=[Hooked] if hooked else [])
    await rt.start()
    marks: list[float] = []
    async for event in rt.run("call noop repeatedly"):
        if isinstance(event, StatusEvent) and event.status == "thinking":
            marks.append(time.perf_counter())
    await rt.close()
    return [(b - a) * 1000 for a, b in zip(marks[1:-1], marks[2:], strict=False)]


async def main(quick: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    n = 2000 if quick else 20000
    out["dispatch_none_us"] = await dispatch(HookRunner([]), n)
    out["dispatch_five_us"] = await dispatch(HookRunner(five()), n)
    steps, rounds = (20, 3) if quick else (40, 8)
    times: dict[bool, list[float]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for hooked in (False, True):
                ws = Path(tmp) / f"r{r}-{int(hooked)}"
                ws.mkdir()
                times[hooked] += await step_times(steps, ws, hooked)
    out["step_none_ms"] = statistics.median(times[False])
    out["step_five_ms"] = statistics.median(times[True])
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    res = asyncio.run(main(parser.parse_args().quick))
    added = res["dispatch_five_us"] - res["dispatch_none_us"]
    print("five no-op hooks, per step (one model call, one tool call):")
    print(f"  (a) dispatch, no hooks:   {res['dispatch_none_us']:8.1f} us")
    print(f"      dispatch, five hooks: {res['dispatch_five_us']:8.1f} us")
    print(f"      added by the hooks:   {added / 1000:8.3f} ms  (goal <= 0.5 ms)")
    print(f"  (b) loop step, no hooks:  {res['step_none_ms']:8.2f} ms (median)")
    print(f"      loop step, five hooks:{res['step_five_ms']:8.2f} ms (median)")
    print(f"      difference:           {res['step_five_ms'] - res['step_none_ms']:8.3f} ms")
