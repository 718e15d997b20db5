"""The per-run write budget (issue 9, item 4): bytes a run writes to disk, across processes.

``write_bytes`` in ``/proc/PID/io`` counts what a process sent toward storage (at page-dirtying
time, so page-cache writes count at once), and a reaped child's counts are added to its
parent's. Summed over the session's live processes (its cgroup, or the launcher's process
tree), the sum only grows while a run writes, also through short-lived children; its rise since
the run started is what the run wrote. tmpfs writes (tier 1 scratch) are not counted: memory
and the tmpfs size bound them instead::

    watch = WriteWatch(session_pids, budget=1 << 30, interval=0.2)
    task = asyncio.create_task(watch.run(on_exceeded))   # on_exceeded(written) is awaited once
    ...
    task.cancel()
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


def written_bytes(pids: list[int]) -> int:
    """The sum of ``write_bytes`` over ``pids`` (processes that vanished count 0)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/io", "rb") as f:
                for line in f:
                    if line.startswith(b"write_bytes:"):
                        total += int(line.split()[1])
                        break
        except (OSError, ValueError):
            continue
    return total


class WriteWatch:
    """Polls the session's written bytes while one run is active."""

    def __init__(self, session_pids: Callable[[], list[int]], budget: int, interval: float):
        self.session_pids = session_pids
        self.budget = budget
        self.interval = max(0.01, interval)
        self.written = 0

    def sample(self) -> int:
        """The session's total written bytes now."""
        return written_bytes(self.session_pids())

    async def run(self, on_exceeded: Callable[[int], Awaitable[None]]) -> None:
        """Take the baseline, then check every ``interval`` until cancelled or exceeded."""
        base = self.sample()
        while True:
            await asyncio.sleep(self.interval)
            self.written = max(self.written, self.sample() - base)
            if self.written > self.budget:
                await on_exceeded(self.written)
                return
