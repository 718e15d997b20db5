"""The disk budgets: bytes runs write to disk, across processes, per run and
per session, and the free space the workspace's filesystem must keep.

``write_bytes`` in ``/proc/PID/io`` counts what a process sent toward storage (at page-dirtying
time, so page-cache writes count at once), and a reaped child's counts are added to its
parent's. Summed over the session's live processes (its cgroup, or the launcher's process
tree), the sum only grows while a run writes, also through short-lived children; its rise since
the run started is what the run wrote. tmpfs writes (tier 1 scratch) are not counted: memory
and the tmpfs size bound them instead::

    ledger = DiskLedger(config, workspace)            # one per sandbox: the session's account
    refused = ledger.refusal()                        # an ExecResult before a run, or None
    watch = WriteWatch(list_pids, last_listed_pids, budget=1 << 30, interval=0.2,
                       in_thread=False, ledger=ledger)
    base = written_bytes(last_listed_pids())          # before the run starts
    watch.start(spawn, on_exceeded, base)             # on_exceeded(message) is awaited once
    ...
    watch.stop()                      # the run ended: its writes are charged to the session

The session's account lives as long as its sandbox (the kernel's session): what all its runs
wrote since the sandbox started, so a budget is not handed out afresh to every run. A restarted
kernel starts a new account; the free-space floor still holds then, so no chain of sessions
or restarts fills the disk under the workspace.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from .cgroups import read_small
from .config import SandboxConfig
from .result import ExecResult

MIB = 1 << 20


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


def free_bytes(path: Path) -> int | None:
    """Bytes an unprivileged writer may still use on the filesystem of ``path`` (None when
    it cannot be read)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def _mib(n: int) -> str:
    return f"{n / MIB:.0f} MiB"


class DiskLedger:
    """What the session's runs wrote, against ``session_write_mb``, and the floor of free
    space (``min_free_mb``) under the workspace.

    Runs at once share one baseline: the session's writes while any run is active are
    counted once, not once per run that watched them.
    """

    def __init__(self, config: SandboxConfig, workspace: Path) -> None:
        self.config = config
        self.workspace = workspace
        self.settled = 0  # bytes of runs that ended
        self.live = 0  # bytes written since the first of the active runs started
        self.active = 0
        self.base = 0

    @property
    def budget(self) -> int:
        """The session's budget in bytes (0: none)."""
        return max(0, self.config.session_write_mb) * MIB

    @property
    def floor(self) -> int:
        """Free bytes the workspace's filesystem must keep (0: no floor)."""
        return max(0, self.config.min_free_mb) * MIB

    @property
    def used(self) -> int:
        """Bytes the session's runs have written so far (the active ones included)."""
        return self.settled + self.live

    def free(self) -> int | None:
        """Free bytes on the workspace's filesystem now."""
        return free_bytes(self.workspace)

    def begin(self, sample: int) -> None:
        """A run starts; ``sample`` is the session's written bytes now."""
        if self.active == 0:
            self.base, self.live = sample, 0
        self.active += 1

    def update(self, sample: int) -> None:
        """A later sample while runs are active."""
        if self.active:
            self.live = max(self.live, sample - self.base)

    def end(self, sample: int) -> None:
        """A run ended (``sample``: the session's written bytes now)."""
        self.update(sample)
        self.active = max(0, self.active - 1)
        if self.active == 0:
            self.settled += self.live
            self.live = 0

    def over(self) -> str | None:
        """Why runs must stop now (the session's budget spent, or the floor reached)."""
        if self.budget and self.used > self.budget:
            return (
                f"this session's runs wrote {_mib(self.used)} to disk in all, over the "
                f"{self.config.session_write_mb} MiB allowed per session (session_write_mb)"
            )
        free = self.free() if self.floor else None
        if free is not None and free < self.floor:
            return (
                f"the filesystem holding the workspace has {_mib(free)} free, under the "
                f"{self.config.min_free_mb} MiB it must keep (min_free_mb)"
            )
        return None

    def refusal(self) -> ExecResult | None:
        """The result of a run refused before it starts, or None when it may start."""
        why = self.over()
        if why is None and self.budget and self.used >= self.budget:
            why = (
                f"this session's runs have written {_mib(self.used)} to disk, all of the "
                f"{self.config.session_write_mb} MiB allowed per session (session_write_mb)"
            )
        if why is None:
            return None
        hint = (
            "make room on that disk, or lower the floor (SandboxConfig)"
            if "min_free_mb" in why
            else "restart the kernel for a new session account, or raise the limit (SandboxConfig)"
        )
        return ExecResult(
            ok=False,
            exit_code=None,
            error_category="disk",
            error=f"refused to run: {why}; {hint}.",
        )

    def describe(self) -> tuple[str, str]:
        """``%think_status`` values: the session's use of its budget, and the floor."""
        used = f"{_mib(self.used)} used of " + (
            f"{self.config.session_write_mb} MiB" if self.budget else "no limit"
        )
        free = self.free()
        floor = f"{self.config.min_free_mb} MiB" if self.floor else "no floor"
        return used, floor + (f" ({_mib(free)} free now)" if free is not None else "")


class WriteWatch:
    """Polls the session's written bytes while one run is active.

    ``session_pids`` lists the session's processes (cheap with a cgroup, a /proc scan
    without); ``known_pids`` returns the list the last scan found, for the baseline at run
    start and the last sample at its end: a process started since then has written next to
    nothing yet, and one that ended has left its counts to its reaper, so these cost a few
    small reads, not a scan.
    """

    def __init__(
        self,
        session_pids: Callable[[], list[int]],
        known_pids: Callable[[], list[int]],
        budget: int,
        interval: float,
        in_thread: bool,
        ledger: DiskLedger | None = None,
    ) -> None:
        self.session_pids = session_pids
        self.known_pids = known_pids
        self.budget = budget  # bytes per run (0: none)
        self.interval = max(0.01, interval)
        self.in_thread = in_thread
        self.ledger = ledger
        self.written = 0
        self.base = 0
        self.task: asyncio.Task[Any] | None = None
        self._open = False

    async def _sample(self) -> int:
        if self.in_thread:  # a /proc scan must not hold up the event loop (and the output)
            return await asyncio.to_thread(lambda: written_bytes(self.session_pids()))
        return written_bytes(self.session_pids())

    def start(
        self,
        spawn: Callable[[Any], asyncio.Task[Any]],
        on_exceeded: Callable[[str], Awaitable[None]],
        base: int | None = None,
    ) -> None:
        """Check in a task made by ``spawn``, from ``base`` (the session's written bytes before
        the run started; read now when not given: a run already writing is then undercounted)."""
        self.base = written_bytes(self.known_pids()) if base is None else base
        if self.ledger is not None:
            self.ledger.begin(self.base)
        self._open = True
        self.task = spawn(self.run(on_exceeded))

    async def run(self, on_exceeded: Callable[[str], Awaitable[None]]) -> None:
        """Check every ``interval`` until cancelled or a budget is exceeded."""
        while True:
            await asyncio.sleep(self.interval)
            sample = await self._sample()
            self.written = max(self.written, sample - self.base)
            why = None
            if self.budget and self.written > self.budget:
                why = (
                    f"the run wrote {self.written / MIB:.0f} MiB to disk, over the "
                    f"{self.budget // MIB} MiB allowed per run (max_write_mb)"
                )
            elif self.ledger is not None:
                self.ledger.update(sample)
                why = self.ledger.over()
            if why is not None:
                await on_exceeded(why)
                return

    def stop(self) -> None:
        """The run ended: stop checking and charge what it wrote to the session."""
        if self.task is not None:
            self.task.cancel()
        if self._open and self.ledger is not None:
            self.ledger.end(written_bytes(self.known_pids()))
        self._open = False
