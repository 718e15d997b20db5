"""The per-session sandbox: one launcher (zygote), warm workers, any number of fresh runs,
and the session's share of the machine (its uid, its cgroup, its disk budgets).

The session has one warm Python worker by default; a ``worker`` key gives another its own
(each subagent has one, issue 12: their variables never collide). ``interrupt(worker=...)``
and ``close_worker`` stop only that worker's processes."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import os
import select
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..waits import wait_for
from .cgroups import SessionCgroup
from .config import SandboxConfig
from .launcher import Launcher, LauncherError, LaunchSpec
from .limits import LimitRow, with_disk_use
from .loopback import LoopbackHandler, LoopbackServer
from .meter import DiskLedger, WriteWatch, written_bytes
from .result import ExecResult, OutputBuffer, classify
from .runs import Run, open_pipes, send_line, serve_channel
from .session import ResourceError, SessionResources
from .tiers import TIER3_WARNING, Tier, available_tiers

OutputCallback = Callable[[str, str], Awaitable[None] | None]

_EXIT_GRACE = 1.0  # seconds to wait for pipes to close after the process is gone
_KILL_GRACE = 3.0  # seconds to wait for the zygote to report a killed run
_PING_DEADLINE = 1.0  # seconds a launcher has to answer a ping before it counts as wedged
_QUIET_EXIT = 0.25  # seconds after a run's output ended with no exit before its launcher is pinged
_MAX_ARG = 128 * 1024  # MAX_ARG_STRLEN: the longest argument execve takes (with its NUL)


def _too_long(command: str) -> bool:
    """True for a command ``bash -c`` cannot take as its argument, only because of its length
    (it is given to a primed bash instead)."""
    if len(command) < _MAX_ARG // 4:  # 4 bytes a character at most: surely short enough
        return False
    try:
        return len(command.encode("utf-8")) >= _MAX_ARG
    except UnicodeEncodeError:
        return False


def _untouched(run: Run) -> bool:
    """True if nothing came out of ``run`` yet. Output before its command was planted by
    other code of the session: under a kernel of the user's uid, sandboxed code can reopen
    a waiting process's pipes through /proc. Its pipes are polled here, as the event loop
    may not have read them yet."""
    if not run.queue.empty():
        return False
    poll = select.poll()
    for fd in run.pipes:
        poll.register(fd, select.POLLIN)
    return not poll.poll(0)  # data, an end or a closed fd (POLLNVAL): not untouched


class SandboxError(RuntimeError):
    """The sandbox cannot run code (tier below ``required_tier``, zygote failed, closed)."""


class Sandbox:
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
        self.preloaded: list[str] = []
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
            await self._start_launcher()
        except BaseException:
            await self.close()
            raise
        return self

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
                          self.identity, cg.attach_fds if cg else list)  # fmt: skip
        launcher = Launcher(spec, lambda msg: None)
        launcher.on_event = functools.partial(self._on_ctl, launcher)
        self._launcher = launcher
        try:
            msg = await launcher.start()
        except LauncherError as e:
            raise SandboxError(str(e)) from None
        self.preloaded = msg.get("preloaded", [])

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

    async def ping(self, deadline: float = _PING_DEADLINE) -> bool:
        """True if the session's launcher answers within ``deadline`` seconds."""
        launcher = self._launcher
        return launcher is not None and launcher.alive and await launcher.ping(deadline)

    def limits(self) -> list[LimitRow]:
        """Every limit in force and the mechanism enforcing it (for ``%think_status``)."""
        return with_disk_use(self.resources.limits(), *self.disk.describe())

    def _spawn_task(self, coro: Any) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _diag(self) -> str:
        return self._launcher.diag() if self._launcher is not None else "no launcher"

    def _on_ctl(self, launcher: Launcher, msg: dict) -> None:
        ev = msg.get("ev")
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
        # API contract (issue 3), not a way to cancel our own await: hence the noqa.
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
            return await self._run_child("python", {"code": code}, timeout, on_output, worker)
        async with self._warm_locks.setdefault(worker, asyncio.Lock()):
            return await self._run_warm(code, timeout, on_output, worker)

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
        return await self._run_child("bash", {"command": command}, timeout, on_output, worker)

    async def interrupt(self, worker: str | None = None) -> None:
        """Kill every running cell's process group (or only ``worker``'s) and wait until
        they are gone."""
        runs = [r for r in self._active if r.exit is None and worker in (None, r.worker)]
        starting = [r for r in self._starting if r.exit is None and worker in (None, r.worker)]
        for run in (both := runs + starting):
            await self._kill(run, "interrupted")
        for launcher in {r.launcher for r in both if r.launcher is not None}:
            if not await launcher.ping(_PING_DEADLINE):  # wedged: the kill cannot get through
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
        deadline = loop.time() + _KILL_GRACE
        launcher = run.launcher
        if run.exit is None and launcher is not None and not await launcher.ping(_PING_DEADLINE):
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

    async def _spawn(self, kind: str, payload: dict, limit: float, worker: str = "") -> Run:
        """Start a process through the launcher; a launcher that does not acknowledge in
        time is replaced once (issue 9: a wedged launcher used to stall the session).

        Stopped (cancelled) once the request is out, it kills the run before it lets the
        cancellation on: the process may be running already, and nobody else knows of it."""
        ack = self._ack(limit)
        notes: list[str] = []
        for attempt in (1, 2):
            launcher = await self._ensure_launcher()
            run, sent = await self._start(launcher, kind, payload, worker)
            if sent:
                self._starting.add(run)
                try:
                    with contextlib.suppress(TimeoutError):
                        await wait_for(run.spawned.wait(), ack)
                except asyncio.CancelledError:
                    await asyncio.shield(self._kill_cancelled(run))
                    raise
                finally:
                    self._starting.discard(run)
            if run.spawned.is_set():
                run.warnings += notes
                return run
            self._runs.pop(run.id, None)
            if attempt == 2:
                break
            notes.append(f"the sandbox launcher did not answer within {ack:g} s and was "
                         "replaced; the warm Python worker's variables are gone")  # fmt: skip
            await self._replace_launcher(launcher)
        raise SandboxError(f"the sandbox launcher does not answer; {self._diag()}")

    async def _start(
        self, launcher: Launcher, kind: str, payload: dict, worker: str = ""
    ) -> tuple[Run, bool]:
        """Make a run's pipes and sockets and ask ``launcher`` to start it; True if the
        request went out."""
        limits = self.config.limits()
        run = Run(next(self._ids), kind, launcher=launcher, limits=limits, worker=worker)
        out_w, err_w = open_pipes(run)
        chan_k, chan_c = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        loop_k, loop_c = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._spawn_task(self.loopback.serve(loop_k))
        self._runs[run.id] = run
        msg = {"op": "spawn", "id": run.id, "kind": kind, "limits": run.limits}
        try:
            await launcher.send({**msg, **payload}, [out_w, err_w, chan_c.fileno(),
                                                     loop_c.fileno()])  # fmt: skip
            sent = True
        except OSError:
            sent = False
        except asyncio.CancelledError:
            # Stopped while sending: the line is either not out at all or wholly out
            # (send_line finishes a line it started); a kill after it covers the second case
            # and is ignored by the launcher in the first.
            self._runs.pop(run.id, None)
            chan_k.close()
            self._spawn_task(self._kill(run, "interrupted"))
            raise
        finally:
            os.close(out_w)
            os.close(err_w)
            chan_c.close()
            loop_c.close()
        run.chan = chan_k
        self._spawn_task(serve_channel(run, chan_k))
        return run, sent

    async def _prime(self) -> None:
        """Start bash runs ahead of their commands (``prime_bash`` of them): the exec of bash
        and its start-up then happen while nobody waits."""
        launcher = self._launcher
        while (not self._closed and launcher is not None and launcher is self._launcher
               and launcher.alive
               and len(self._primed) + self._priming < self.config.prime_bash):  # fmt: skip
            self._priming += 1
            try:
                run, sent = await self._start(launcher, "bash", {"primed": True})
            except OSError:  # out of file descriptors: commands start the usual way
                return
            finally:
                self._priming -= 1
            if not sent or self._closed:
                await self._kill(run, "stale")
                return
            self._primed.append(run)

    async def _take_primed(self, command: str, ack: float) -> Run | None:
        """A primed bash run, given ``command``; None if none can take it (the caller then
        starts a run the usual way)."""
        try:
            data = command.encode("utf-8")
        except UnicodeEncodeError:
            return None
        # A primed bash reads its command, of any length (a NUL is refused by run_bash).
        if not data or b"\0" in data:
            return None
        while self._primed:
            run = self._primed.pop(0)
            if await self._give(run, data, ack):
                return run
        return None

    async def _spawn_long(self, command: str, limit: float, worker: str) -> Run:
        """A bash run for a command too long for ``bash -c`` (execve takes at most 128 KiB an
        argument): started as a primed one is, then given its command on its channel."""
        run = await self._spawn("bash", {"primed": True}, limit, worker)
        if await self._give(run, command.encode("utf-8"), self._ack(limit)):
            return run
        raise SandboxError(f"the sandboxed bash ended before it took its command; {self._diag()}")

    async def _give(self, run: Run, data: bytes, ack: float) -> bool:
        """Hand ``data`` to the waiting bash ``run``; True if it has it. One that cannot take
        it is killed. Stopped here, the command may be on its way (or running) and no one else
        holds this run any more: it is killed, then the cancellation goes on."""
        try:
            if await self._hand_command(run, data, ack):
                return True
        except asyncio.CancelledError:
            await asyncio.shield(self._kill_cancelled(run))
            raise
        if run.exit is None:
            await self._kill(run, "stale")
        return False

    async def _hand_command(self, run: Run, data: bytes, ack: float) -> bool:
        """Send ``data`` to the primed bash ``run`` if it can still take it; True if sent."""
        if run.exit is None and not run.spawned.is_set():
            with contextlib.suppress(TimeoutError):
                await wait_for(run.spawned.wait(), ack)
        if not (run.spawned.is_set() and run.exit is None and run.pid is not None
                and run.launcher is self._launcher and run.chan is not None
                and run.limits == self.config.limits() and _untouched(run)):  # fmt: skip
            return False
        try:
            await asyncio.get_running_loop().sock_sendall(run.chan, b"%d\n" % len(data) + data)
        except OSError:
            return False  # it died: its end of the socket is closed
        return True

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
            if kind == "bash" and taken is None and _too_long(payload["command"]):
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

    async def _died_before_its_command(self, run: Run) -> bool:
        """True if a primed bash run ended without having taken its command (other code of
        the session killed it while it waited): the command never ran, and may be run again.
        Its "took" line precedes the command, so once its channel is closed the answer is
        certain."""
        if run.took or run.kill_reason is not None or run.exit is None:
            return False
        with contextlib.suppress(TimeoutError):
            await wait_for(run.chan_done.wait(), _EXIT_GRACE)
        return run.chan_closed and not run.took

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

    def _finish(self, res: ExecResult, run: Run, start: float) -> ExecResult:
        res.duration_ms = (time.perf_counter() - start) * 1000
        res.warnings[:0] = run.warnings
        if self.tier == Tier.RLIMITS:
            res.warnings.insert(0, TIER3_WARNING)
        return res

    def _watch(self, run: Run, written: int) -> WriteWatch | None:
        """Start the disk watch of one run from ``written``, the session's written bytes before
        it started (None when there is no budget and no floor)."""
        cfg = self.config
        if cfg.max_write_mb <= 0 and cfg.session_write_mb <= 0 and cfg.min_free_mb <= 0:
            return None
        watch = WriteWatch(
            self.session_pids,
            lambda: self.resources.known_pids(self._root_pid()),
            max(0, cfg.max_write_mb) << 20,
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
                    deadline = min(deadline, loop.time() + _EXIT_GRACE) if run.exit else deadline
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
                        deadline = loop.time() + _KILL_GRACE
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
                    deadline = min(deadline, loop.time() + _KILL_GRACE)
                # "exit" only wakes us up: run.exit holds it.
        finally:
            if watch is not None:
                watch.stop()
        for stream in ("stdout", "stderr"):
            await emit(stream, out.feed(stream, b"", final=True))
        res = classify(kind=run.kind, exit=run.exit, kill_reason=run.kill_reason,
                       kill_detail=run.kill_detail, report=result, out=out, outputs=outputs,
                       limit=limit, diag=self._diag)  # fmt: skip
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
        if launcher is None or await launcher.ping(_PING_DEADLINE):
            return False
        await self._replace_launcher(launcher)
        run.warnings.append("the sandbox launcher stopped answering and was replaced; the "
                            "warm Python worker's variables are gone")  # fmt: skip
        return True
