"""What at-least-once delivery costs a firing, and how late a reminder fires.

    python bench/schedules.py [--quick]

(a) Bookkeeping per firing: ``Scheduler.run_due`` over N due rows with a no-op handler (claim
    with a lease and owner, a ``firings`` record, the settle), until every row is done.
    Baseline in the same run: the bookkeeping of an at-most-once scheduler
    (one ``UPDATE ... pending -> running``, then one ``UPDATE ... done``) over as many rows.
(b) Lateness: a row due 50 ms from now, added while the scheduler sleeps; time from its due
    time to its handler, with ``wake()`` (what a kernel's link RPC does) and without it (the
    next look is the ``poll`` of 0.5 s here; 5 s by default).
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

from think_kernel.schedules.scheduler import Scheduler  # noqa: E402
from think_kernel.store import Store  # noqa: E402


def ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:.3f} ms"


async def bookkeeping(store: Store, n: int) -> tuple[float, float]:
    """Seconds per firing: the scheduler's, and the old at-most-once baseline's."""
    now = time.time()
    for i in range(n):
        await store.add_schedule("noop", now - 1, {"i": i}, "s")
    done = asyncio.Event()
    left = [n]

    async def noop(payload, firing):
        left[0] -= 1
        if left[0] == 0:
            done.set()

    sched = Scheduler(store, owner="bench", lease=60)
    sched.register("noop", noop)
    t0 = time.perf_counter()
    while left[0] > 0:
        await sched.run_due()
        await asyncio.sleep(0)
    await done.wait()
    await sched.drain()
    ours = (time.perf_counter() - t0) / n
    await sched.close()

    for i in range(n):
        await store.add_schedule("old", now - 1, {"i": i}, "s")
    rows = await store.list_schedules(kind="old", statuses=["pending"], limit=n)
    t0 = time.perf_counter()
    for row in rows:
        await store.db.execute(
            "UPDATE schedules SET status = 'running', attempts = attempts + 1, updated_at = ?"
            " WHERE id = ? AND status = 'pending'",
            (time.time(), row["id"]),
        )
        await store.db.execute(
            "UPDATE schedules SET status = 'done', updated_at = ? WHERE id = ?",
            (time.time(), row["id"]),
        )
    base = (time.perf_counter() - t0) / n
    return ours, base


async def lateness(store: Store, wake: bool, poll: float) -> float:
    fired = asyncio.get_running_loop().create_future()

    async def ping(payload, firing):
        if not fired.done():
            fired.set_result(time.time() - firing.occurrence_at)

    sched = Scheduler(store, poll=poll, owner="late")
    sched.register("ping", ping)
    task = asyncio.create_task(sched.run())
    try:
        await asyncio.sleep(0.05)  # the scheduler is asleep, nothing due
        await store.add_schedule("ping", time.time() + 0.05, {}, "s")
        if wake:
            sched.wake()
        return await asyncio.wait_for(fired, poll + 5)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await sched.drain()  # the handler settles its row before the next repeat
        await sched.close()


async def main(quick: bool) -> None:
    n = 200 if quick else 1000
    reps = 3 if quick else 7
    with tempfile.TemporaryDirectory() as tmp:
        store = await Store.open(Path(tmp) / "think.db")
        await store.create_session(id="s")
        try:
            ours, base = [], []
            for _ in range(reps):
                a, b = await bookkeeping(store, n)
                ours.append(a)
                base.append(b)
            print(f"(a) bookkeeping per firing, {n} rows, median of {reps}:")
            print(f"    at least once (lease, owner, firing record): {ms(ours)}")
            print(f"    baseline, at most once (two UPDATEs):        {ms(base)}")
            print(f"    ratio {statistics.median(ours) / statistics.median(base):.1f}x")
            woken = [await lateness(store, True, 0.5) for _ in range(reps)]
            polled = [await lateness(store, False, 0.5) for _ in range(reps)]
            print(f"(b) due -> handler, median of {reps}:")
            print(f"    with wake():            {ms(woken)}")
            print(f"    baseline, poll of 0.5 s: {ms(polled)}")
        finally:
            await store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rows and repeats")
    asyncio.run(main(parser.parse_args().quick))
