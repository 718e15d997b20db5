"""What the agent's own tools (.think/tools) cost: per model step, and per call.

    python bench/selftools.py [--quick]

Per step, the loop checks the tool folder (one listing; files are re-read only when their
mtime or size changed), then sends every tool's spec with the request. Measured in one run
on two workspaces, one with no tool files (the baseline) and one with 20 approved tools in 4
files: the check, the specs of the whole registry and the prompt section, as medians (and
p90), and the difference.

Per call, in one session's sandbox (the tier this machine picks): the first call of a new
tool (the folder check reading, parsing and loading a new file, then the call: the module
runs in the warm worker, then the function), a warm call of the same tool (the module is
kept), and beside them the built-in ``execute_code`` running the same body.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from traitlets.config import Config  # noqa: E402

from think_kernel.config import ThinkConfig  # noqa: E402
from think_kernel.runtime import Runtime  # noqa: E402

TOOL = textwrap.dedent('''
    def tool_{n}_{i}(path: str, limit: int = 10, columns: list[str] | None = None) -> dict:
        """Summarize part {i} of a data file: columns, rows and a sample.

        Args:
            path: the file, relative to the workspace
            limit: rows to sample
            columns: only these columns
        """
        return {{"path": path, "limit": limit, "n": {n}}}
''')


def tool_file(n: int, tools: int) -> str:
    """A file of ``tools`` tools; ``n`` makes its content (and hash) its own."""
    return f"READ_ONLY = []\nVERSION = {n}\n" + "".join(TOOL.format(n=n, i=i) for i in range(tools))


def show(label: str, times: list[float]) -> float:
    """Print the median and p90 in ms; return the median."""
    ms = sorted(t * 1000 for t in times)
    median = statistics.median(ms)
    p90 = ms[max(0, int(len(ms) * 0.9) - 1)]
    print(f"{label:<52} median {median:8.3f} ms   p90 {p90:8.3f} ms   (n={len(ms)})")
    return median


async def runtime(root: Path) -> Runtime:
    """A standalone session on ``root`` that trusts its tool folder (no person to wait for:
    the approval is a person's time, not the machine's)."""
    cfg = Config()
    cfg.ThinkConfig.trust_workspace_tools = True
    cfg.SandboxConfig.preload_modules = []
    rt = Runtime(ThinkConfig(config=cfg), root, extensions=[])
    await rt.start()
    return rt


async def per_step(rt: Runtime, n: int) -> list[float]:
    """Seconds of each of ``n`` steps' worth of tool work: the folder check, the registry's
    specs and the prompt section."""
    assert rt.store is not None
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        await rt.selftools.refresh(rt.store, rt.session_id, "m")
        rt.tools.specs()
        rt.selftools.prompt()
        times.append(time.perf_counter() - t0)
    return times


async def calls(rt: Runtime, root: Path, rounds: int) -> tuple[list[float], ...]:
    """(first call of a new tool incl. its load, warm call, execute_code) in seconds."""
    assert rt.store is not None
    folder = root / ".think" / "tools"
    first, warm, builtin = [], [], []
    code = "{'path': 'data.csv', 'limit': 10, 'n': 0}"
    await rt.tools.call("execute_code", {"code": "1"}, rt.make_context("m", "c"))  # started
    for n in range(rounds):
        (folder / f"new_{n}.py").write_text(tool_file(1000 + n, 1))
        name = f"tool_{1000 + n}_0"
        args = {"path": "data.csv"}
        t0 = time.perf_counter()
        await rt.selftools.refresh(rt.store, rt.session_id, "m")
        out = await rt.tools.call(name, args, rt.make_context("m", "c"))
        first.append(time.perf_counter() - t0)
        assert out.output.ok, out.output.text
        for _ in range(3):
            t0 = time.perf_counter()
            await rt.selftools.refresh(rt.store, rt.session_id, "m")
            out = await rt.tools.call(name, args, rt.make_context("m", "c"))
            warm.append(time.perf_counter() - t0)
            assert out.output.ok, out.output.text
            t0 = time.perf_counter()
            out = await rt.tools.call("execute_code", {"code": code}, rt.make_context("m", "c"))
            builtin.append(time.perf_counter() - t0)
            assert out.output.ok, out.output.text
    return first, warm, builtin


async def run(n: int, rounds: int) -> None:
    """Measure and print."""
    with tempfile.TemporaryDirectory() as tmp:
        none_root, many_root = Path(tmp) / "none", Path(tmp) / "twenty"
        none_root.mkdir()
        (many_root / ".think" / "tools").mkdir(parents=True)
        for f in range(4):
            (many_root / ".think" / "tools" / f"tools_{f}.py").write_text(tool_file(f, 5))
        none, many = await runtime(none_root), await runtime(many_root)
        try:
            assert many.store is not None
            await many.selftools.refresh(many.store, many.session_id, "m")
            assert sum(len(f.tools) for f in many.selftools.files.values()) == 20
            await per_step(none, 50)  # warm both the same way
            await per_step(many, 50)
            base = show("per step, no tool files", await per_step(none, n))
            twenty = show("per step, 20 self-written tools (4 files)", await per_step(many, n))
            print(f"{'added per step by 20 self-written tools':<52} median {twenty - base:8.3f} ms")
            first, warm, builtin = await calls(many, many_root, rounds)
            show("first call of a new tool (load + run in sandbox)", first)
            show("warm call of a self-written tool", warm)
            show("execute_code of the same body (built-in)", builtin)
            tier = many.sandbox.tier.name if many.sandbox is not None else "?"
            print(f"sandbox tier: {tier}")
        finally:
            await none.close()
            await many.close()


def main() -> None:
    """Run the measurement and print it."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    quick = parser.parse_args().quick
    asyncio.run(run(200 if quick else 2000, 5 if quick else 20))


if __name__ == "__main__":
    main()
