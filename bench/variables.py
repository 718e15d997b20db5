"""Benchmark of reading a notebook kernel's variables. Prints medians; targets in
docs/benchmarks.md.

    python bench/variables.py            # 1,000,000-row DataFrame, 30 reads of each
    python bench/variables.py --quick    # 10 reads

A real Jupyter server with the extension and a real python3 kernel (the notebook's session)
holding ``df``: 1,000,000 rows of int, float with NaNs, text, dates and a category. Measured,
in the same run:

1. ``GET /api/think/variables?names=df`` (what ``inspect_variables`` and ``@df`` use): the
   whole path, HTTP and the server's silent request to the kernel; and the size of its answer
2. baseline, the same summary the plain way: a silent ``execute_request`` from a kernel
   client whose code prints ``df.dtypes``, ``df.isna().sum()`` and ``df.head()``
3. baseline, the way chat extensions such as jupyter-ai put a variable in context:
   ``repr(df)`` as a user expression (no null counts, and unbounded for other objects)

and the kernel's ``execution_count`` before and after, which must not move.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from jupyter_client import BlockingKernelClient

sys.path.insert(0, str(Path(__file__).resolve().parent))

from server import call, start_server, wait_up  # noqa: E402

ROWS = 1_000_000
SETUP = f"""
import numpy as np, pandas as pd
n = {ROWS}
rng = np.random.default_rng(0)
x = rng.random(n)
x[::97] = np.nan
df = pd.DataFrame({{
    "id": np.arange(n),
    "value": x,
    "name": pd.Series(["row%d" % (i % 1000) for i in range(n)]),
    "when": pd.date_range("2024-01-01", periods=n, freq="min"),
    "group": pd.Categorical(rng.choice(["a", "b", "c"], n)),
}})
del x
"""
PLAIN = "print(df.dtypes); print(df.isna().sum()); print(df.head().to_string())"


def report(name: str, times: list[float], size: int, target: str) -> None:
    """One result line: median and worst of ``times`` (seconds), answer size in characters."""
    med, worst = statistics.median(times) * 1000, max(times) * 1000
    print(f"{name:<54} {med:>8.1f} ms  (max {worst:>6.1f})  {size:>8,} chars  {target}")


def timed(fn: Callable[[], int], runs: int) -> tuple[list[float], int]:
    """Times of ``runs`` calls of ``fn`` (after one warm-up) and the size it returned."""
    size = fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        size = fn()
        times.append(time.perf_counter() - t0)
    return times, size


def silent(kc: BlockingKernelClient, code: str, expressions: dict[str, str]) -> dict:
    """A silent execute_request; its reply's content, with the printed text as ``stdout``."""
    msg_id = kc.execute(code, silent=True, store_history=False, user_expressions=expressions)
    out: list[str] = []
    while True:
        msg = kc.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    while True:
        reply = kc.get_shell_msg(timeout=30)
        if reply["parent_header"].get("msg_id") == msg_id:
            return {**reply["content"], "stdout": "".join(out)}


def count(kc: BlockingKernelClient) -> int:
    """The kernel's execution count, read silently."""
    reply = silent(kc, "", {"n": "get_ipython().execution_count"})
    return int(reply["user_expressions"]["n"]["data"]["text/plain"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    runs = 10 if parser.parse_args().quick else 30
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        root = tmp / "root"
        root.mkdir()
        (root / "big.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, '
                                        '"nbformat_minor": 5}')  # fmt: skip
        proc, port = start_server(root, tmp, True)
        try:
            wait_up(port, "api/think/sessions")
            body = {"path": "big.ipynb", "type": "notebook", "kernel": {"name": "python3"}}
            session = call(port, "POST", "api/sessions", body)
            kernel_id = session["kernel"]["id"]
            kc = BlockingKernelClient()
            kc.load_connection_file(str(tmp / "runtime" / f"kernel-{kernel_id}.json"))
            kc.start_channels()
            kc.wait_for_ready(timeout=60)
            reply = kc.execute_interactive(SETUP, timeout=120)
            assert reply["content"]["status"] == "ok", reply["content"]
            before = count(kc)
            print(f"df: {ROWS:,} rows x 5 columns; {runs} reads each; 2 cores shared")

            def ours() -> int:
                answer = call(port, "GET", "api/think/variables?path=big.ipynb&names=df")
                assert answer["status"] == "ok", answer
                return len(answer["text"])

            times, size = timed(ours, runs)
            report("inspect_variables (GET /api/think/variables)", times, size, "<= 100 ms")

            def plain() -> int:
                return len(silent(kc, PLAIN, {})["stdout"])

            times, size = timed(plain, runs)
            report("baseline: silent execute_request, same summary", times, size, "for contrast")

            def with_repr() -> int:
                reply = silent(kc, "", {"r": "repr(df)"})
                return len(reply["user_expressions"]["r"]["data"]["text/plain"])

            times, size = timed(with_repr, runs)
            report("baseline: repr(df) as a user expression", times, size, "for contrast")
            after = count(kc)
            print(f"execution_count before {before}, after {after} (must be equal)")
            kc.stop_channels()
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
