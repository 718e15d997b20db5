"""How much time Think itself adds around the model, with a model that answers instantly.

    python bench/agent_overhead.py [--quick]

Prints medians (and p90) next to the peer figures (jupyter-ai 3.2.0, measured side by side):

(a) Loop cost per step. An in-process scripted model (the ``ModelClient.stream`` protocol, no
    HTTP) answers each step at once with one call of a trivial tool (returns "ok"), so the wall
    time of a step (from one "thinking" status to the next) is the loop's own cost: building
    the model messages from history, storing the reply, running and logging the tool, storing
    the result (SQLite, committed). Measured with 10 and with 200 messages of history in the
    session, to show it is flat. The same run over HTTP (``OpenAIModel``) against the
    scripted server (tests/fake_model.py) is printed too: that figure includes the client's
    request and SSE parsing and the server's own work, so it is an upper bound.
(b) First token -> first output: a real think kernel (jupyter_client) streams an answer from
    the scripted server; we subtract the time the server sent its first token
    (``FakeModel.first_token_at``) from the time the first iopub message carrying that text
    reached the client (same machine clock).
(c) In a python3 kernel: ``%load_ext think_kernel`` (timed inside the kernel) and a whole
    ``%%think`` cell with the instant model, client-side from execute_request to execute_reply,
    next to an empty cell in the same kernel as baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fake_model import FakeModel  # noqa: E402
from think_kernel.agent.events import StatusEvent  # noqa: E402
from think_kernel.agent.model import Chunk, OpenAIModel  # noqa: E402
from think_kernel.config import ThinkConfig  # noqa: E402
from think_kernel.runtime import Runtime  # noqa: E402
from think_kernel.tools.base import ToolContext, read_only  # noqa: E402


@read_only  # changes nothing: never waits for an approval (the default approval policy)
async def noop(ctx: ToolContext, note: str = "") -> str:
    """A trivial tool: returns "ok"."""
    return "ok"


class BenchRuntime(Runtime):
    """Runtime with the trivial tool added."""

    extra_tools = [noop]


class InstantModel:
    """Answers every step at once: ``steps`` tool calls, then a short text."""

    def __init__(self, steps: int) -> None:
        self.left = steps
        self.calls = 0

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        model: str,
        *,
        purpose: str = "step",
    ) -> AsyncIterator[Chunk]:
        """One completion."""
        self.calls += 1
        if self.left > 0:
            self.left -= 1
            yield Chunk("tool_call", index=0, call_id=f"c{self.calls}", name="noop", arguments="{}")
            yield Chunk("finish", text="tool_calls")
        else:
            yield Chunk("text", text="done")
            yield Chunk("finish", text="stop")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def seed_history(rt: Runtime, n: int) -> None:
    assert rt.store is not None
    for i in range(n // 2):
        await rt.store.add_message(rt.session_id, "user", f"question {i} " + "x" * 200)
        await rt.store.add_message(rt.session_id, "assistant", f"answer {i} " + "y" * 400)


async def step_times(history: int, steps: int, model: Any, ws: Path) -> list[float]:
    cfg = ThinkConfig(base_url="http://unused", api_key="k", max_steps=steps + 2)
    rt = BenchRuntime(cfg, ws, model=model, extensions=[])
    await rt.start()
    await seed_history(rt, history)
    marks: list[float] = []
    async for event in rt.run("call noop repeatedly"):
        if isinstance(event, StatusEvent) and event.status == "thinking":
            marks.append(time.perf_counter())
    marks.append(time.perf_counter())
    await rt.close()
    return [(b - a) * 1000 for a, b in zip(marks[1:-1], marks[2:], strict=False)]


async def bench_loop(steps: int) -> dict[str, float]:
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for history in (10, 200):
            ws = Path(tmp) / f"h{history}"
            ws.mkdir()
            times = await step_times(history, steps, InstantModel(steps), ws)
            out[f"loop_h{history}"] = statistics.median(times)
            out[f"loop_h{history}_p90"] = pct(times, 0.9)
        fm = FakeModel().start()
        try:
            for _ in range(steps):
                fm.reply(tool_calls=[("noop", {})], chunk_size=64)
            fm.reply(text="done")
            ws = Path(tmp) / "http"
            ws.mkdir()
            times = await step_times(10, steps, OpenAIModel("k", fm.url), ws)
            out["http_step"] = statistics.median(times)
        finally:
            fm.stop()
    return out


def bench_kernels(trials: int) -> dict[str, float]:
    from jupyter_client.manager import KernelManager

    fm = FakeModel().start()
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "THINK_"))}
        env.update(OPENAI_BASE_URL=fm.url, OPENAI_API_KEY="k", THINK_MODEL="fake")
        env["IPYTHONDIR"] = str(Path(tmp) / "ipython")

        def start(name: str) -> tuple[Any, Any]:
            km = KernelManager(kernel_name=name)
            km.start_kernel(cwd=tmp, env=env)
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=60)
            return km, kc

        def run(kc: Any, code: str, watch: str | None = None) -> tuple[float, float | None]:
            """Returns (execute -> reply seconds, wall time the first output containing
            ``watch`` arrived)."""
            t0 = time.perf_counter()
            msg_id = kc.execute(code)
            first = None
            while True:
                msg = kc.get_iopub_msg(timeout=30)
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                data = msg["content"].get("data", {}).get("text/markdown", "")
                if first is None and watch and watch in data:
                    first = time.time()
                if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                    break
            while kc.get_shell_msg(timeout=30)["parent_header"].get("msg_id") != msg_id:
                pass
            return time.perf_counter() - t0, first

        km, kc = start("think")
        try:
            run(kc, "%think_status")
            latencies = []
            for i in range(trials):
                fm.reply(tokens=[f"tok{i} ", "and ", "more ", "text"], delay=0.02)
                _, first = run(kc, f"answer {i}", watch=f"tok{i}")
                assert first is not None
                latencies.append((first - fm.first_token_at[-1]) * 1000)
            out["first_token_ms"] = statistics.median(latencies)
            out["first_token_p90"] = pct(latencies, 0.9)
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)

        km, kc = start("python3")
        try:
            t0 = time.perf_counter()
            msg_id = kc.execute(
                "import time as _t\n_t0 = _t.perf_counter()\n"
                "get_ipython().run_line_magic('load_ext', 'think_kernel')\n"
                "_load = _t.perf_counter() - _t0"
            )
            kc.get_shell_msg(timeout=30)
            reply = kc.execute("_load", user_expressions={"x": "_load"}, reply=True, timeout=30)
            del t0, msg_id
            value = reply["content"]["user_expressions"]["x"]["data"]["text/plain"]
            out["load_ext_s"] = float(value)
            run(kc, "%think_status")  # wait for the warm-up of the runtime
            fm.reply(text="warm")
            run(kc, "%%think\nwarm up")
            cells, empty = [], []
            for i in range(trials):
                fm.reply(text=f"answer {i}")
                cells.append(run(kc, f"%%think\nquestion {i}")[0] * 1000)
                empty.append(run(kc, "pass")[0] * 1000)
            out["think_cell_ms"] = statistics.median(cells)
            out["empty_cell_ms"] = statistics.median(empty)
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    fm.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps and trials")
    args = parser.parse_args()
    steps, trials = (20, 8) if args.quick else (60, 25)
    loop = asyncio.run(bench_loop(steps))
    kern = bench_kernels(trials)
    rows = [
        (
            "loop cost per step, 10 msgs history (p50)",
            f"{loop['loop_h10']:.2f} ms",
            "~51 ms",
            "<= 2 ms",
        ),
        (
            "loop cost per step, 200 msgs history (p50)",
            f"{loop['loop_h200']:.2f} ms",
            "~115 ms",
            "<= 2 ms, flat",
        ),
        (
            "  p90 at 10 / 200 msgs",
            f"{loop['loop_h10_p90']:.2f} / {loop['loop_h200_p90']:.2f} ms",
            "",
            "",
        ),
        ("step over HTTP (upper bound)", f"{loop['http_step']:.2f} ms", "", ""),
        (
            "first token -> first iopub output (p50)",
            f"{kern['first_token_ms']:.1f} ms",
            "n/a (not streamed)",
            "<= 50 ms",
        ),
        ("  p90", f"{kern['first_token_p90']:.1f} ms", "", ""),
        ("%load_ext think_kernel", f"{kern['load_ext_s'] * 1000:.0f} ms", "2550 ms", "<= 300 ms"),
        (
            "%%think cell, instant model (p50)",
            f"{kern['think_cell_ms']:.1f} ms",
            "52.8 ms",
            "<= 10 ms",
        ),
        ("  empty cell in the same kernel (baseline)", f"{kern['empty_cell_ms']:.1f} ms", "", ""),
    ]
    print(f"{'measure':46} {'ours':>16} {'jupyter-ai 3.2.0':>20} {'target':>14}")
    for name, ours, peer, target in rows:
        print(f"{name:46} {ours:>16} {peer:>20} {target:>14}")


if __name__ == "__main__":
    main()
