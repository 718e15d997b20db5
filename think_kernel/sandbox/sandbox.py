"""The per-session sandbox: one launcher (zygote), warm workers, any number of fresh runs,
and the session's share of the machine (its uid, its cgroup, its disk budgets).

The session has one warm Python worker by default; a ``worker`` key gives another its own
(each subagent has one: their variables never collide). ``interrupt(worker=...)``
and ``close_worker`` stop only that worker's processes."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from ..waits import wait_for
from .cgroups import SessionCgroup
from .collect import CollectRuns, OutputCallback
from .config import SandboxConfig
from .errors import SandboxError
from .launcher import Launcher, LauncherError, LaunchSpec
from .limits import LimitRow, with_disk_use
from .loopback import LoopbackHandler, LoopbackServer
from .meter import DiskLedger, WriteWatch
from .result import ExecResult
from .reviewruns import ReviewRuns
from .runs import KILL_GRACE, PING_DEADLINE, Run, open_pipes, send_line
from .session import ResourceError, SessionResources
from .starting import StartRuns, too_long
from .tiers import Tier, available_tiers

__all__ = ["OutputCallback", "Sandbox", "SandboxError"]


class Sandbox(StartRuns, CollectRuns, ReviewRuns):
    """Runs code for one session in isolation. See the package docstring for the API."""

    def __init__(self, workspace: Path, session_id: str, config: SandboxConfig, tier: Tier) -> None:
        self.workspace = workspace
        self.session_id = session_id
        self.config = config
        self.tier = tier
        self.loopback = LoopbackServer()
        self.scratch = Path(
            tempfile.mkdtemp(prefix=f"think-{session_id[:24]}-", dir=config.scratch_root or None)
        )
        #: The session's uid, cgroup and process bookkeeping.
        self.resources = SessionResources(config, tier, workspace, self.scratch)
        #: What the session's runs wrote, against its budget and the free-space floor.
        self.disk = DiskLedger(config, workspace)
        self.launcher_restarts = 0
        #: What the zygote's preload imported, once it has (see :meth:`wait_preloaded`).
        self.preloaded: list[str] = []
        self._preload_asked = False
        self._preload_done = asyncio.Event()
        self._ids = iter(range(1, 1 << 62))
        self._runs: dict[int, Run] = {}
        self._active: set[Run] = set()
        # Runs whose start was asked for and not yet acknowledged: already running, maybe
        # (a busy kernel hears of a spawn after the process has begun), so Stop kills them too.
        self._starting: set[Run] = set()
        self._tasks: set[asyncio.Task] = set()
        self._warms: dict[str, Run] = {}  # worker key -> its warm Python worker
        self._warm_locks: dict[str, asyncio.Lock] = {}
        self._launcher_lock = asyncio.Lock()
        self._launcher: Launcher | None = None
        self._closed = False
        #: Bash runs started ahead of their commands (``prime_bash``), oldest first, and
        #: how many are being started.
        self._primed: list[Run] = []
        self._priming = 0
        self._init_review()

    @property
    def identity(self) -> tuple[int, int] | None:
        """(uid, gid) of the session's sandboxed processes; None when the kernel is not root."""
        return self.resources.identity

    @property
    def cgroup(self) -> SessionCgroup | None:
        """The session's cgroup, if the kernel could create one."""
        return self.resources.cgroup

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def create(
        cls, workspace_root: Path, session_id: str, config: SandboxConfig | None = None
    ) -> Sandbox:
        """Pick the tier, take a uid and a cgroup, prepare workspace access, start the zygote."""
        self = await cls.prepare(workspace_root, session_id, config)
        try:
            await self.start()
        except BaseException:
            await self.close()
            raise
        return self

    @classmethod
    async def prepare(
        cls, workspace_root: Path, session_id: str, config: SandboxConfig | None = None
    ) -> Sandbox:
        """Pick the tier, take a uid and a cgroup, prepare workspace access: all a session
        needs but its processes, which :meth:`start` starts (``close`` gives it all back)."""
        config = config or SandboxConfig()
        tiers = await asyncio.to_thread(available_tiers, config.bwrap_path)
        tier = Tier(config.force_tier) if config.force_tier else tiers[0]
        if tier not in tiers:
            raise SandboxError(f"sandbox tier {int(tier)} was forced but cannot run here")
        if tier > config.required_tier:
            raise SandboxError(
                f"refusing to run code: best sandbox here is {tier.description}, but "
                f"required_tier is {config.required_tier}"
            )
        workspace = await asyncio.to_thread(Path(workspace_root).resolve)
        self = cls(workspace, session_id, config, tier)
        try:
            await asyncio.to_thread(self._prepare)
        except BaseException:
            await self.close()
            raise
        return self

    async def start(self) -> None:
        """Start the zygote (once): ready for bash at once, the heavy preload follows."""
        await self._ensure_launcher()

    def _prepare(self) -> None:
        try:
            self.resources.prepare()
        except ResourceError as e:
            raise SandboxError(str(e)) from None
        except OSError as e:
            # The file system is live (the workspace, the private paths): say what failed as
            # the sandbox's own error, which callers report and retry on the next use.
            raise SandboxError(f"cannot prepare the session's sandbox: {e}") from e

    async def _start_launcher(self) -> None:
        cg = self.cgroup
        spec = LaunchSpec(self.config, self.tier, self.workspace, self.scratch, self.session_id,
                          self.identity, cg.attach_fds if cg else list,
                          self.config.defer_preload and not self._preload_asked,
                          self._view.mount() if self._view is not None else None)  # fmt: skip
        launcher = Launcher(spec, lambda msg: None)
        launcher.on_event = functools.partial(self._on_ctl, launcher)
        self._launcher = launcher
        self.preloaded = []
        self._preload_done.clear()
        try:
            await launcher.start()
        except LauncherError as e:
            raise SandboxError(str(e)) from None

    async def _ensure_launcher(self) -> Launcher:
        if self._closed:
            raise SandboxError("sandbox is closed")
        async with self._launcher_lock:
            if self._launcher is not None and self._launcher.alive:
                return self._launcher
            if self._launcher is not None:
                await self._launcher.stop(graceful=False, kill_session=self._kill_session)
            self._warms.clear()
            await self._start_launcher()
            assert self._launcher is not None
            return self._launcher

    async def _replace_launcher(self, wedged: Launcher) -> None:
        """Kill a launcher that stopped answering (and the whole session with it); the next
        run starts a new one."""
        async with self._launcher_lock:
            if self._launcher is not wedged:
                return  # someone replaced it already
            self.launcher_restarts += 1
            self._warms.clear()
            await wedged.stop(graceful=False, kill_session=self._kill_session)
            if not self._closed:
                await self._start_launcher()

    def _root_pid(self) -> int | None:
        launcher = self._launcher
        return launcher.proc.pid if launcher is not None and launcher.proc is not None else None

    def _kill_session(self) -> None:
        self.resources.kill_all(self._root_pid())

    def session_pids(self) -> list[int]:
        """Host pids of the session's processes (the cgroup, else the launcher's tree)."""
        return self.resources.pids(self._root_pid())

    def launcher_pid(self) -> int | None:
        """The zygote's host pid (for diagnostics and tests)."""
        return self._launcher.host_pid() if self._launcher is not None else None

    async def preload(self) -> None:
        """Have the zygote import its heavy modules now, in the background (a Python run
        would otherwise wait for them); a zygote started later imports them at once."""
        self._preload_asked = True
        launcher = self._launcher
        if launcher is not None and launcher.alive:
            with contextlib.suppress(OSError):  # gone: its successor preloads at once
                await launcher.send({"op": "preload"})

    async def wait_preloaded(self) -> list[str]:
        """Wait until the zygote's preload is done; the modules it imported."""
        await self._preload_done.wait()
        return self.preloaded

    async def ping(self, deadline: float = PING_DEADLINE) -> bool:
        """True if the session's launcher answers within ``deadline`` seconds."""
        launcher = self._launcher
        return launcher is not None and launcher.alive and await launcher.ping(deadline)

    def limits(self) -> list[LimitRow]:
        """Every limit in force and the mechanism enforcing it (for ``%think_status``)."""
        return with_disk_use(self.resources.limits(), *self.disk.describe()) + self.review_row()

    def _spawn_task(self, coro: Any) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _diag(self) -> str:
        return self._launcher.diag() if self._launcher is not None else "no launcher"

    def _on_ctl(self, launcher: Launcher, msg: dict) -> None:
        ev = msg.get("ev")
        if ev == "preloaded":
            if launcher is self._launcher:
                self.preloaded = msg.get("preloaded", [])
                self._preload_done.set()
            return
        if ev == "gone":
            # The zygote is gone: every run it owned is dead too.
            for lost in [r for r in self._runs.values() if r.launcher is launcher]:
                self._on_ctl(launcher, {"ev": "exit", "id": lost.id, "code": None,
                                        "signal": None, "lost": True})  # fmt: skip
            return
        run = self._runs.get(msg.get("id", -1))
        if run is None or run.launcher is not launcher:
            return
        if ev == "spawned":
            run.pid = msg["pid"]
            run.spawned.set()
        elif ev == "exit":
            self._runs.pop(run.id, None)
            run.exit = msg
            run.spawned.set()
            run.ended.set()
            run.queue.put_nowait(("exit", msg, b""))
            if self._warms.get(run.worker) is run:
                del self._warms[run.worker]

    # ------------------------------------------------------------------ public API

    async def serve_loopback(self, handler: LoopbackHandler | None) -> None:
        """Route ``think.*`` calls from sandboxed code to ``handler(tool, args)``."""
        self.loopback.handler = handler

    async def run_python(
        self,
        code: str,
        *,
        # The timeout is the sandboxed process's wall-clock limit (it is killed), part of the
        # API contract, not a way to cancel our own await: hence the noqa.
        timeout: float | None = None,  # noqa: ASYNC109
        fresh: bool = False,
        on_output: OutputCallback | None = None,
        worker: str = "",
    ) -> ExecResult:
        """Run Python in the warm worker (state persists) or, with ``fresh``, in a new process.
        ``worker`` names whose warm worker (and whose processes) it is: "" the session's."""
        refused = self.disk.refusal()
        if refused is not None:
            return refused
        if fresh:
            return await self._reviewed(
                lambda: self._run_child("python", {"code": code}, timeout, on_output, worker)
            )
        async with self._warm_locks.setdefault(worker, asyncio.Lock()):
            return await self._reviewed(lambda: self._run_warm(code, timeout, on_output, worker))

    async def run_bash(
        self,
        command: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (see run_python)
        on_output: OutputCallback | None = None,
        worker: str = "",
    ) -> ExecResult:
        """Run a bash command line in a fresh sandboxed process (``worker``: see run_python)."""
        if "\0" in command:
            return ExecResult(
                ok=False,
                exit_code=None,
                error_category="runtime",
                error="the command holds a NUL character, which bash cannot run",
            )
        refused = self.disk.refusal()
        if refused is not None:
            return refused
        return await self._reviewed(
            lambda: self._run_child("bash", {"command": command}, timeout, on_output, worker)
        )

    async def interrupt(self, worker: str | None = None) -> None:
        """Kill every running cell's process group (or only ``worker``'s) and wait until
        they are gone."""
        runs = [r for r in self._active if r.exit is None and worker in (None, r.worker)]
        starting = [r for r in self._starting if r.exit is None and worker in (None, r.worker)]
        for run in (both := runs + starting):
            await self._kill(run, "interrupted")
        for launcher in {r.launcher for r in both if r.launcher is not None}:
            if not await launcher.ping(PING_DEADLINE):  # wedged: the kill cannot get through
                await self._replace_launcher(launcher)
        waits = [r.done.wait() for r in runs] + [r.ended.wait() for r in starting]
        if waits:
            await asyncio.wait([asyncio.ensure_future(w) for w in waits], timeout=5)

    async def close(self) -> None:
        """Kill everything, remove the scratch dir and the cgroup, give the uid back. Safe to
        call twice."""
        if self._closed:
            return
        self._closed = True
        self._primed.clear()
        async with self._launcher_lock:
            if self._launcher is not None:
                await self._launcher.stop(graceful=True, kill_session=self._kill_session)
            self._warms.clear()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        await self._close_review()
        await asyncio.to_thread(shutil.rmtree, self.scratch, True)
        await asyncio.to_thread(self.resources.release)

    async def close_worker(self, worker: str) -> None:
        """Stop a worker's running processes and its warm Python worker (its state is gone)."""
        if not worker:
            raise ValueError("the session's own worker is closed with the sandbox")
        await self.interrupt(worker)
        warm = self._warms.pop(worker, None)
        if warm is not None and warm.exit is None:
            await self._kill(warm, "closed")
        self._warm_locks.pop(worker, None)

    async def start_job(
        self,
        command: str,
        limits: dict[str, int],
        worker: str,
        listen: socket.socket | None = None,
        net: bool = False,
    ) -> Run:
        """Start ``command`` in a fresh bash under ``limits`` (rlimits, the shape of
        ``config.limits()``) and return its run at once: a background job, which no wall
        clock of the sandbox's limits and no ``interrupt`` ends. Its owner reads
        ``run.queue`` and ends it with :meth:`kill_run`; ``close`` kills it with the rest.
        ``listen``: a listening socket the process gets as ``$THINK_APP_FD`` (a live app);
        ``net``: its process tree may make inet sockets (tier 1, in its own network namespace)."""
        if "\0" in command:
            raise SandboxError("the command holds a NUL character, which bash cannot run")
        if too_long(command):
            raise SandboxError("the command is too long for bash -c; put it in a script file")
        refused = self.disk.refusal()
        if refused is not None:
            raise SandboxError(refused.error)
        ack = 4 * self.config.launcher_timeout  # _ack takes a quarter of it
        # In review mode a job starts in the view; what it writes reaches the proposal at
        # the session's next run, or collect_review().
        await self._review_before()
        payload = {"command": command, "net": True} if net else {"command": command}
        return await self._spawn("bash", payload, ack, worker, limits, listen)

    def watch_job(self, run: Run, budget_mb: int) -> WriteWatch | None:
        """Watch a job's disk writes as a run's are (its own ``budget_mb``, the session's
        budget, the free-space floor); past one it is killed with reason ``disk`` and a
        ``wake`` event in its queue. The caller stops the watch when the job ends."""
        return self._watch(run, self._written(), budget_mb)

    async def kill_run(self, run: Run, reason: str) -> None:
        """Kill a run's process group (a job's), recording ``reason`` as why."""
        await self._kill(run, reason)

    def oom_kills(self) -> int:
        """How many of the session's processes its memory limit killed so far (0: no cgroup)."""
        return self._oom_kills()

    def workers(self) -> list[str]:
        """Keys of the warm workers alive now ("" is the session's)."""
        return [k for k, r in self._warms.items() if r.exit is None]

    async def __aenter__(self) -> Sandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ internals

    async def _kill(self, run: Run, reason: str) -> None:
        if run.kill_reason is None:
            run.kill_reason = reason
        if run.launcher is not None:
            with contextlib.suppress(OSError):
                await run.launcher.send({"op": "kill", "id": run.id})

    async def _kill_cancelled(self, run: Run) -> None:
        """The awaiting task was cancelled (Stop): kill the run's process group, wait for it
        (a wedged launcher that cannot pass the kill on is replaced, as for interrupt)."""
        await self._kill(run, "interrupted")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + KILL_GRACE
        launcher = run.launcher
        if run.exit is None and launcher is not None and not await launcher.ping(PING_DEADLINE):
            await self._replace_launcher(launcher)
        while run.exit is None and loop.time() < deadline:
            try:
                await wait_for(run.queue.get(), deadline - loop.time())
            except TimeoutError:
                break

    def _timeout(self, timeout: float | None) -> float:
        t = self.config.timeout if timeout is None or timeout <= 0 else timeout
        return min(float(t), float(self.config.max_timeout))

    def _ack(self, limit: float) -> float:
        """How long a run's start may take to be acknowledged: capped so a replacement of
        the launcher (about a zygote start-up) still fits in the run's timeout ``limit``."""
        return min(self.config.launcher_timeout, max(1.0, limit / 4))

    async def _run_child(
        self,
        kind: str,
        payload: dict,
        limit: float | None,
        on_output: OutputCallback | None,
        worker: str = "",
    ) -> ExecResult:
        start = time.perf_counter()
        seconds = self._timeout(limit)
        for attempt in (1, 2):
            ooms = self._oom_kills()  # before the run starts: see _oom_kills
            written = self._written()  # the same
            taken = None
            if kind == "bash" and attempt == 1:
                taken = await self._take_primed(payload["command"], self._ack(seconds))
            if kind == "bash" and taken is None and too_long(payload["command"]):
                taken = await self._spawn_long(payload["command"], seconds, worker)
            primed = taken is not None
            run = taken or await self._spawn(kind, payload, seconds, worker)
            run.worker = worker
            self._active.add(run)
            try:
                res = await self._collect(run, seconds, on_output, ooms, written, need_exit=True)
            except asyncio.CancelledError:
                await asyncio.shield(self._kill_cancelled(run))
                raise
            finally:
                self._active.discard(run)
                run.done.set()
                if kind == "bash" and self.config.prime_bash:
                    # After the run, not beside it: the exec of the next bash would compete
                    # with this one for the CPUs (and its launcher's attention).
                    self._spawn_task(self._prime())
            if not (primed and await self._died_before_its_command(run)):
                break
        return self._finish(res, run, start)

    async def _run_warm(
        self, code: str, limit: float | None, on_output: OutputCallback | None, worker: str = ""
    ) -> ExecResult:
        start = time.perf_counter()
        seconds = self._timeout(limit)
        ooms = self._oom_kills()
        written = self._written()
        warm = self._warms.get(worker)
        notes: list[str] = []
        if warm is None or warm.exit is not None or warm.chan is None or warm.chan_closed:
            if warm is not None and warm.exit is None:
                await self._kill(warm, "stale")
            warm = await self._spawn("warm", {}, seconds, worker)
            notes, warm.warnings = warm.warnings, []
            self._warms[worker] = warm
        cell = warm
        cell.queue = asyncio.Queue()
        cell.done = asyncio.Event()
        cell.warnings = notes
        out_w, err_w = open_pipes(cell)
        self._active.add(cell)
        try:
            try:
                assert cell.chan is not None
                await self._send_cell(cell.chan, code, [out_w, err_w])
            except OSError:
                cell.queue.put_nowait(("chan_eof", "", b""))
            finally:
                os.close(out_w)
                os.close(err_w)
            res = await self._collect(cell, seconds, on_output, ooms, written, need_exit=False)
        except asyncio.CancelledError:
            if self._warms.get(worker) is cell:
                del self._warms[worker]  # the next cell gets a fresh worker
            await asyncio.shield(self._kill_cancelled(cell))
            raise
        finally:
            self._active.discard(cell)
            cell.done.set()
        if cell.exit is not None or cell.kill_reason or cell.chan_closed:
            if cell.exit is None:
                await self._kill(cell, "stale")
            self._warms.pop(worker, None)
            res.warnings.append("the warm Python worker was restarted: earlier variables are gone")
        return self._finish(res, cell, start)

    async def _send_cell(self, chan: socket.socket, code: str, fds: list[int]) -> None:
        await send_line(chan, {"code": code, "cpu_seconds": self.config.cpu_seconds}, fds)
