"""Collecting one run's result: its output (capped), its displays and report, its time
limit, its disk writes, its memory kills, and a launcher that stops answering meanwhile.

Part of :class:`~think_kernel.sandbox.sandbox.Sandbox` (its base class).
"""

from __future__ import annotations

import asyncio
import inspect
import signal
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..waits import wait_for
from .meter import WriteWatch, written_bytes
from .result import ExecResult, OutputBuffer, classify
from .runs import EXIT_GRACE, KILL_GRACE, PING_DEADLINE, Run
from .tiers import TIER3_WARNING, Tier

if TYPE_CHECKING:
    from .cgroups import SessionCgroup
    from .config import SandboxConfig
    from .launcher import Launcher
    from .meter import DiskLedger
    from .session import SessionResources

OutputCallback = Callable[[str, str], Awaitable[None] | None]

_QUIET_EXIT = 0.25  # seconds after a run's output ended with no exit before its launcher is pinged


class CollectRuns:
    """How the sandbox waits for a run and turns what it did into an ``ExecResult``."""

    # What these methods use of the sandbox (set, or defined, by ``Sandbox``).
    config: SandboxConfig
    tier: Tier
    resources: SessionResources
    disk: DiskLedger

    if TYPE_CHECKING:

        @property
        def cgroup(self) -> SessionCgroup | None: ...
        def session_pids(self) -> list[int]: ...
        def _root_pid(self) -> int | None: ...
        def _diag(self) -> str: ...
        def _spawn_task(self, coro: Any) -> asyncio.Task: ...
        async def _replace_launcher(self, wedged: Launcher) -> None: ...
        async def _kill(self, run: Run, reason: str) -> None: ...

    def _finish(self, res: ExecResult, run: Run, start: float) -> ExecResult:
        res.duration_ms = (time.perf_counter() - start) * 1000
        res.warnings[:0] = run.warnings
        if self.tier == Tier.RLIMITS:
            res.warnings.insert(0, TIER3_WARNING)
        return res

    def _watch(self, run: Run, written: int, budget_mb: int | None = None) -> WriteWatch | None:
        """Start the disk watch of one run from ``written``, the session's written bytes before
        it started (None when there is no budget and no floor). ``budget_mb``: its own write
        budget instead of ``max_write_mb`` (a background job's)."""
        cfg = self.config
        per_run = cfg.max_write_mb if budget_mb is None else budget_mb
        if per_run <= 0 and cfg.session_write_mb <= 0 and cfg.min_free_mb <= 0:
            return None
        watch = WriteWatch(
            self.session_pids,
            lambda: self.resources.known_pids(self._root_pid()),
            max(0, per_run) << 20,
            cfg.write_check_interval,
            in_thread=self.cgroup is None,
            ledger=self.disk,
        )

        async def exceeded(why: str) -> None:
            run.kill_detail = f"{why}; its process group was killed"
            await self._kill(run, "disk")
            run.queue.put_nowait(("wake", "", b""))

        watch.start(self._spawn_task, exceeded, written)
        return watch

    def _written(self) -> int:
        """The session's written bytes now: a run's disk baseline. Read before the run starts,
        as :meth:`_oom_kills` is: a loaded kernel may first look at a run after it wrote."""
        return written_bytes(self.resources.known_pids(self._root_pid()))

    def _oom_kills(self) -> int:
        """The session's count of processes killed for its memory limit. A run's memory kill
        is told by this count growing, so it is read before the run (or its cell) starts: a
        loaded kernel may first look at a run after the kernel killed it (and counted it)."""
        return self.cgroup.oom_kills() if self.cgroup is not None else 0

    async def _collect(
        self,
        run: Run,
        limit: float,
        on_output: OutputCallback | None,
        ooms: int,
        written: int,
        need_exit: bool,
    ) -> ExecResult:
        loop = asyncio.get_running_loop()
        out = OutputBuffer(self.config.max_output_bytes)
        outputs: list[dict] = []
        result: dict | None = None
        eofs: set[str] = set()
        chan_eof = False
        deadline = loop.time() + limit
        grace_set = False
        noted = False
        asked = False
        watch = self._watch(run, written)

        async def emit(stream: str, text: str) -> None:
            if on_output is not None and text:
                r = on_output(stream, text)
                if inspect.isawaitable(r):
                    await r

        try:
            while True:
                # A warm cell ends with its result; anything else ends when it is reaped.
                ended = run.exit is not None or (not need_exit and result is not None)
                # A fresh Python run reports on its channel: wait for that too (it may trail
                # exit). Count the queued "chan_eof" event, not run.chan_closed: the result
                # message sits before it in the queue.
                reported = run.kind != "python" or chan_eof
                if ended and len(eofs) == 2 and reported:
                    break
                if ended and not grace_set:
                    deadline = min(deadline, loop.time() + EXIT_GRACE) if run.exit else deadline
                    grace_set = True
                wait = max(0, deadline - loop.time())
                # Its output ended but no exit came: the process closed its pipes, or its
                # launcher cannot report (wedged). Asked once, after a quiet spell.
                quiet = need_exit and not asked and len(eofs) == 2 and run.exit is None
                try:
                    kind, a, b = await wait_for(
                        run.queue.get(), min(wait, _QUIET_EXIT) if quiet else wait
                    )
                except TimeoutError:
                    if ended:
                        break  # something kept our pipes open; give up on them
                    if quiet and wait > _QUIET_EXIT:
                        asked = True
                        if await self._check_launcher(run):
                            run.kill_detail = (
                                "its output ended, but the sandbox launcher stopped answering "
                                "before it reported the exit status (it was replaced)"
                            )
                            break
                        continue
                    if run.kill_reason is None:
                        await self._kill(run, "timeout")
                        # The kill goes through the launcher: make sure it still answers.
                        if await self._check_launcher(run):
                            break
                        deadline = loop.time() + KILL_GRACE
                        continue
                    await self._check_launcher(run)
                    break
                if kind == "out":
                    was = out.truncated
                    await emit(a, out.feed(a, b))
                    if out.truncated and not was and not noted:
                        noted = True
                        await emit("stderr", "\n[output truncated: max_output_bytes reached]\n")
                elif kind == "eof":
                    eofs.add(a)
                elif kind == "msg":
                    if a.get("ev") == "display":
                        outputs.append(a["data"])
                    elif a.get("ev") == "result":
                        result = a
                elif kind == "chan_eof":
                    chan_eof = True
                elif kind == "wake" and run.exit is None:  # killed for its disk writes
                    if await self._check_launcher(run):
                        break
                    deadline = min(deadline, loop.time() + KILL_GRACE)
                # "exit" only wakes us up: run.exit holds it.
        finally:
            if watch is not None:
                watch.stop()
        for stream in ("stdout", "stderr"):
            await emit(stream, out.feed(stream, b"", final=True))
        res = classify(kind=run.kind, exit=run.exit, kill_reason=run.kill_reason,
                       kill_detail=run.kill_detail, report=result, out=out, outputs=outputs,
                       limit=limit, diag=self._diag, default=self.config.timeout,
                       ceiling=self.config.max_timeout)  # fmt: skip
        # Bash reports a command killed for memory as 128 + 9 when it forked the command
        # (not its last one, or a primed bash, which forks them all).
        killed = res.error_category == "killed" or (
            run.kind == "bash" and res.exit_code == 128 + signal.SIGKILL
        )
        if killed and run.kill_reason is None and self.cgroup and self.cgroup.oom_kills() > ooms:
            res.error_category = "memory"
            res.error = (f"killed: the session reached its memory limit "
                         f"({self.config.session_memory_mb} MiB, session_memory_mb)")  # fmt: skip
        return res

    async def _check_launcher(self, run: Run) -> bool:
        """After asking the launcher to kill a run: if it does not answer a ping either, it
        is wedged; replace it (which kills the whole session, this run included) and say so
        in the run's result. True when it was replaced."""
        launcher = run.launcher
        if launcher is None or await launcher.ping(PING_DEADLINE):
            return False
        await self._replace_launcher(launcher)
        run.warnings.append("the sandbox launcher stopped answering and was replaced; the "
                            "warm Python worker's variables are gone")  # fmt: skip
        return True
