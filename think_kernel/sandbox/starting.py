"""Starting a session's runs through its launcher: a process per run, bash runs primed
ahead of their commands, and commands too long for ``bash -c``.

Part of :class:`~think_kernel.sandbox.sandbox.Sandbox` (its base class): the methods here
keep its run table (``_runs``, ``_starting``, ``_primed``) and hand each started
:class:`~think_kernel.sandbox.runs.Run` back to the sandbox, which collects its result.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..waits import wait_for
from .errors import SandboxError
from .launcher import Launcher
from .runs import EXIT_GRACE, Run, open_pipes, serve_channel

if TYPE_CHECKING:
    from .config import SandboxConfig
    from .loopback import LoopbackServer

_MAX_ARG = 128 * 1024  # MAX_ARG_STRLEN: the longest argument execve takes (with its NUL)


def too_long(command: str) -> bool:
    """True for a command ``bash -c`` cannot take as its argument, only because of its length
    (it is given to a primed bash instead)."""
    if len(command) < _MAX_ARG // 4:  # 4 bytes a character at most: surely short enough
        return False
    try:
        return len(command.encode("utf-8")) >= _MAX_ARG
    except UnicodeEncodeError:
        return False


def untouched(run: Run) -> bool:
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


class StartRuns:
    """How the sandbox starts its runs (a base class of ``Sandbox``)."""

    # What these methods use of the sandbox (set, or defined, by ``Sandbox``).
    config: SandboxConfig
    loopback: LoopbackServer
    _ids: Iterator[int]
    _runs: dict[int, Run]
    _starting: set[Run]
    _primed: list[Run]
    _priming: int
    _launcher: Launcher | None
    _closed: bool

    if TYPE_CHECKING:

        def _ack(self, limit: float) -> float: ...
        def _diag(self) -> str: ...
        def _spawn_task(self, coro: Any) -> asyncio.Task: ...
        async def _ensure_launcher(self) -> Launcher: ...
        async def _replace_launcher(self, wedged: Launcher) -> None: ...
        async def _kill(self, run: Run, reason: str) -> None: ...
        async def _kill_cancelled(self, run: Run) -> None: ...

    async def _spawn(
        self,
        kind: str,
        payload: dict,
        limit: float,
        worker: str = "",
        limits: dict[str, int] | None = None,
        listen: socket.socket | None = None,
    ) -> Run:
        """Start a process through the launcher; a launcher that does not acknowledge in
        time is replaced once (a wedged launcher would stall the session). ``listen``, a
        listening socket, is handed to it as ``$THINK_APP_FD`` (an app's, ``serve_app``).

        Stopped (cancelled) once the request is out, it kills the run before it lets the
        cancellation on: the process may be running already, and nobody else knows of it."""
        ack = self._ack(limit)
        notes: list[str] = []
        for attempt in (1, 2):
            launcher = await self._ensure_launcher()
            run, sent = await self._start(launcher, kind, payload, worker, limits, listen)
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
        self,
        launcher: Launcher,
        kind: str,
        payload: dict,
        worker: str = "",
        limits: dict[str, int] | None = None,
        listen: socket.socket | None = None,
    ) -> tuple[Run, bool]:
        """Make a run's pipes and sockets and ask ``launcher`` to start it (under ``limits``,
        the configured rlimits by default); True if the request went out."""
        limits = self.config.limits() if limits is None else limits
        run = Run(next(self._ids), kind, launcher=launcher, limits=limits, worker=worker)
        out_w, err_w = open_pipes(run)
        chan_k, chan_c = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        loop_k, loop_c = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._spawn_task(self.loopback.serve(loop_k))
        self._runs[run.id] = run
        msg = {"op": "spawn", "id": run.id, "kind": kind, "limits": run.limits}
        fds = [out_w, err_w, chan_c.fileno(), loop_c.fileno()]
        if listen is not None:
            msg["listen"] = True
            fds.append(listen.fileno())
        try:
            await launcher.send({**msg, **payload}, fds)
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
                and run.limits == self.config.limits() and untouched(run)):  # fmt: skip
            return False
        try:
            await asyncio.get_running_loop().sock_sendall(run.chan, b"%d\n" % len(data) + data)
        except OSError:
            return False  # it died: its end of the socket is closed
        return True

    async def _died_before_its_command(self, run: Run) -> bool:
        """True if a primed bash run ended without having taken its command (other code of
        the session killed it while it waited): the command never ran, and may be run again.
        Its "took" line precedes the command, so once its channel is closed the answer is
        certain."""
        if run.took or run.kill_reason is not None or run.exit is None:
            return False
        with contextlib.suppress(TimeoutError):
            await wait_for(run.chan_done.wait(), EXIT_GRACE)
        return run.chan_closed and not run.took
