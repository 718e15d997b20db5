"""Sandbox speed, against a plain ``python3 -c`` measured in the same run, and what
the hardening costs (same run, same tier, hardening switched off vs on).

    python bench/sandbox.py [--tier 1|2|3] [-n 50]

Targets: warm trivial snippet p50 <= 2 ms; fresh isolated run <= 25 ms; fresh run using
numpy + pandas <= 40 ms; interrupt-to-dead <= 200 ms; with the hardening on, warm still
<= 2 ms and fresh pandas <= 40 ms. "Off" is ``SandboxConfig.hardening_off()``: a shared uid,
no cgroup, no write budget, no scratch tmpfs (the seccomp rules cannot be switched off).
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from think_kernel.sandbox import Sandbox, SandboxConfig  # noqa: E402

PANDAS = "import numpy as np, pandas as pd\nprint(pd.DataFrame({'a': np.arange(10)}).a.sum())"


def baseline(code: str, n: int) -> float:
    """Median wall time of ``python3 -c code`` (no sandbox at all), in ms."""
    times = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


async def timed(n: int, make) -> list[float]:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(n):
        t = time.perf_counter()
        res = await make()
        times.append((time.perf_counter() - t) * 1000)
        assert res.ok, res
    return times


async def interrupt_latency(sb: Sandbox, n: int, fresh: bool) -> list[float]:
    times = []
    for _ in range(n):
        started = asyncio.Event()
        task = asyncio.ensure_future(
            sb.run_python(
                "print('go', flush=True)\nwhile True: pass",
                fresh=fresh,
                on_output=lambda s, t, ev=started: ev.set(),
            )
        )
        await started.wait()
        t = time.perf_counter()
        await sb.interrupt()
        res = await task
        times.append((time.perf_counter() - t) * 1000)
        assert res.error_category == "killed", res
    return times


def line(name: str, times: list[float], target: float | None, base: float | None) -> None:
    p50 = statistics.median(times)
    ok = "    " if target is None else "ok  " if p50 <= target else "MISS"
    goal = "no target" if target is None else f"target <= {target:g} ms"
    ratio = f"  {p50 / base:5.2f}x python3 -c ({base:.1f} ms)" if base else ""
    print(f"{ok} {name:38s} p50 {p50:7.2f} ms  p90 {sorted(times)[int(len(times) * .9)]:7.2f}"
          f" ms  ({goal}){ratio}")  # fmt: skip


async def hardening_cost(tier: int, n: int, ws: Path) -> None:
    """Warm and fresh runs with the issue-9 hardening off and on, measured alternately."""
    off_cfg = SandboxConfig(force_tier=tier)
    off_cfg.hardening_off()
    off = await Sandbox.create(ws, "bench-off", off_cfg)
    on = await Sandbox.create(ws, "bench-on", SandboxConfig(force_tier=tier))
    print("\nhardening cost (per-session uid, cgroup, write budget, scratch tmpfs), p50:")
    try:
        rows = [("warm worker, trivial snippet", lambda sb: sb.run_python("x += 1"), 2.0),
                ("fresh isolated run, trivial", lambda sb: sb.run_python("pass", fresh=True),
                 25.0),
                ("fresh isolated run, numpy + pandas",
                 lambda sb: sb.run_python(PANDAS, fresh=True), 40.0),
                ("bash 'true'", lambda sb: sb.run_bash("true"), None)]  # fmt: skip
        for sb in (off, on):
            await sb.run_python("x = 0")
        for name, make, target in rows:
            times: dict[str, list[float]] = {"off": [], "on": []}
            for _ in range(4):  # alternate batches: both see the same machine load
                for label, sb in (("off", off), ("on", on)):
                    times[label] += await timed(max(1, n // 4), lambda sb=sb, m=make: m(sb))
            p_off, p_on = statistics.median(times["off"]), statistics.median(times["on"])
            ok = "    " if target is None else "ok  " if p_on <= target else "MISS"
            goal = f"target <= {target:g} ms" if target else "no target"
            print(f"{ok} {name:38s} off {p_off:7.2f} ms  on {p_on:7.2f} ms  "
                  f"({p_on - p_off:+.2f} ms, {goal})")  # fmt: skip
    finally:
        await off.close()
        await on.close()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tier", type=int, default=0, help="force a tier (default: detect)")
    ap.add_argument("-n", type=int, default=40)
    args = ap.parse_args()
    n = args.n
    base_trivial = baseline("pass", max(5, n // 4))
    base_pandas = baseline(PANDAS, max(3, n // 8))
    ws = Path(tempfile.mkdtemp(prefix="think-bench-"))
    t = time.perf_counter()
    sb = await Sandbox.create(ws, "bench", SandboxConfig(force_tier=args.tier))
    print(f"sandbox: {sb.tier.description}")
    print(f"start-up (zygote + preload {', '.join(sb.preloaded) or 'nothing'}): "
          f"{(time.perf_counter() - t) * 1000:.0f} ms, once per session")  # fmt: skip
    try:
        await sb.run_python("x = 0")  # spawn the warm worker
        warm = await timed(n, lambda: sb.run_python("x += 1"))
        line("warm worker, trivial snippet", warm, 2, base_trivial)
        fresh = await timed(n, lambda: sb.run_python("pass", fresh=True))
        line("fresh isolated run, trivial", fresh, 25, base_trivial)
        pandas = await timed(n, lambda: sb.run_python(PANDAS, fresh=True))
        line("fresh isolated run, numpy + pandas", pandas, 40, base_pandas)
        line("bash 'true'", await timed(n, lambda: sb.run_bash("true")), None, base_trivial)
        line(
            "interrupt-to-dead, warm", await interrupt_latency(sb, max(5, n // 4), False), 200, None
        )
        line(
            "interrupt-to-dead, fresh", await interrupt_latency(sb, max(5, n // 4), True), 200, None
        )
    finally:
        await sb.close()
    try:
        await hardening_cost(args.tier, n, ws)
    finally:
        shutil.rmtree(ws, ignore_errors=True)
    print(
        "\nFor comparison: jupyter-ai's bash tool runs commands unsandboxed in the server's own "
        "environment (its secrets, network and files), so its per-call cost is a bare process "
        "start - the 'python3 -c' baseline above - with none of the isolation measured here."
    )


if __name__ == "__main__":
    asyncio.run(main())
