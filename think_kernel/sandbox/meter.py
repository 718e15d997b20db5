"""The per-run write budget (issue 9, item 4): bytes a run writes to disk, across processes.

``write_bytes`` in ``/proc/PID/io`` counts what a process sent toward storage (at page-dirtying
time, so page-cache writes count at once), and a reaped child's counts are added to its
parent's. Summed over the session's live processes (its cgroup, or the launcher's process
tree), the sum only grows while a run writes, also through short-lived children; its rise since
the run started is what the run wrote. tmpfs writes (tier 1 scratch) are not counted: memory
and the tmpfs size bound them instead::

    watch = WriteWatch(list_pids, last_listed_pids, budget=1 << 30, interval=0.2,
                       in_thread=False)
    task = asyncio.create_task(watch.run(on_exceeded))   # on_exceeded(written) is awaited once
    ...
    task.cancel()
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from .cgroups import read_small


def written_bytes(pids: list[int]) -> int:
    """The sum of ``write_bytes`` over ``pids`` (processes that vanished count 0)."""
    total = 0
    for pid in pids:
        try:
            data = read_small(f"/proc/{pid}/io")
            at = data.index(b"write_bytes:") + 12
            total += int(data[at : data.index(b"\n", at)])
        except (OSError, ValueError):
            continue
    return total


class WriteWatch:
    """Polls the session's written bytes while one run is active.

    ``session_pids`` lists the session's processes (cheap with a cgroup, a /proc scan
    without); ``known_pids`` returns the list the last scan found, for the baseline at run
    start: a process started since then has written next to nothing yet, and one that ended
    has left its counts to its reaper, so the baseline costs a few small reads, not a scan.
    """

    def __init__(
        self,
        session_pids: Callable[[], list[int]],
        known_pids: Callable[[], list[int]],
        budget: int,
        interval: float,
        in_thread: bool,
    ) -> None:
        self.session_pids = session_pids
        self.known_pids = known_pids
        self.budget = budget
        self.interval = max(0.01, interval)
        self.in_thread = in_thread
        self.written = 0

    async def _sample(self) -> int:
        if self.in_thread:  # a /proc scan must not hold up the event loop (and the output)
            return await asyncio.to_thread(lambda: written_bytes(self.session_pids()))
        return written_bytes(self.session_pids())

    async def run(self, on_exceeded: Callable[[int], Awaitable[None]]) -> None:
        """Take the baseline, then check every ``interval`` until cancelled or exceeded."""
        base = written_bytes(self.known_pids())
        while True:
            await asyncio.sleep(self.interval)
            self.written = max(self.written, await self._sample() - base)
            if self.written > self.budget:
                await on_exceeded(self.written)
                return
