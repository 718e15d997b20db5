"""How long the store's writes wait while its WAL is checkpointed, against the
checkpoint it replaced.

    python bench/checkpoints.py [--quick]

A session's store written as an agent loop writes it: a step appends an assistant message,
completes it and reads the session (three statements, on the event loop's thread), then
pauses 0.5 ms, as a real loop waits for its model or tools and lets a finished checkpoint
report back. Over the run the WAL passes 4 MiB about a dozen times, and a worker thread
checkpoints it each time (``think_kernel/store/loopdb.py``).

- ``now``: ``PRAGMA wal_checkpoint(PASSIVE)`` copies the WAL while writers go on, then
  ``RESTART`` finishes it; the write that starts the WAL over cuts the file back to 4 MiB
  (``journal_size_limit``).
- ``before`` (the baseline, same run, alternating): ``wal_checkpoint(TRUNCATE)`` alone, which
  holds every writer back for the whole copy, sync and truncation.

Prints, per variant, medians over the runs of: a step's p50, p99 and worst time, and the
time spent in steps slower than 5 ms per 1,000 steps. The peer
(jupyter-ai 3.2.0) keeps no such store on its loop: there is nothing of its to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from think_kernel.store import Store, loopdb  # noqa: E402

CURRENT = loopdb._checkpoint


def _truncate(path: Path, busy_timeout: float) -> None:
    """The checkpoint before this change: TRUNCATE, writers held back for all of it."""
    with loopdb._lock:
        conn = sqlite3.connect(str(path), timeout=busy_timeout, isolation_level=None)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()


async def one_run(variant: str, steps: int, tmp: Path) -> dict[str, float]:
    """``steps`` loop-like steps on a fresh store; the step times' figures (ms)."""
    loopdb._checkpoint = CURRENT if variant == "now" else _truncate  # type: ignore[assignment]
    checkpoints = 0
    run = loopdb._checkpoint

    def counted(*a: Any) -> None:
        nonlocal checkpoints
        checkpoints += 1
        run(*a)

    loopdb._checkpoint = counted  # type: ignore[assignment]
    store = await Store.open(tmp / f"{variant}-{time.monotonic_ns()}.db")
    if variant != "now":
        await store.db.execute("PRAGMA journal_size_limit=-1")  # as it was: no limit
    sid = (await store.create_session(title="bench"))["id"]
    times = []
    try:
        for i in range(steps):
            t0 = time.perf_counter()
            row = await store.add_message(
                sid, "assistant", "", status="streaming", model="m", heartbeat_at=time.time()
            )
            await store.update_message(
                row["id"], content=f"answer {i} " * 20, status="complete", tokens_in=900,
                tokens_out=40, heartbeat_at=time.time(),
            )  # fmt: skip
            await store.get_session(sid)
            times.append((time.perf_counter() - t0) * 1000)
            await asyncio.sleep(0.0005)
        if store.db._checkpoint is not None:
            await store.db._checkpoint
    finally:
        await store.close()
        loopdb._checkpoint = CURRENT  # type: ignore[assignment]
    times.sort()
    return {
        "p50": times[len(times) // 2],
        "p99": times[int(len(times) * 0.99)],
        "max": times[-1],
        "stalled": sum(t for t in times if t > 5) * 1000 / steps,
        "checkpoints": checkpoints,
    }


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    """Run both variants, alternating; print and return the medians."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="CI-sized counts")
    args = ap.parse_args(argv)
    steps, runs = (1000, 3) if args.quick else (2000, 5)
    got: dict[str, list[dict[str, float]]] = {"now": [], "before": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            for variant in ("now", "before"):
                got[variant].append(asyncio.run(one_run(variant, steps, Path(tmp))))
    out = {v: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for v, rs in got.items()}
    print(f"store writes during WAL checkpoints: {steps} steps of 3 statements, {runs} runs each")
    print(f"{'':8} {'p50':>8} {'p99':>8} {'worst':>8} {'>5 ms per 1k':>13} {'checkpoints':>12}")
    for v, f in out.items():
        print(f"{v:8} {f['p50']:7.2f}  {f['p99']:7.2f}  {f['max']:7.1f}  {f['stalled']:10.0f} ms"
              f" {f['checkpoints']:10.0f}")  # fmt: skip
    b, n = out["before"], out["now"]
    print(f"ratio before/now: p99 {b['p99'] / n['p99']:.1f}x, worst {b['max'] / n['max']:.1f}x, "
          f"stalled {b['stalled'] / max(n['stalled'], 0.001):.1f}x")  # fmt: skip
    return out


if __name__ == "__main__":
    main()
