"""The kernel's handle on one zygote (the session's launcher): start it, talk to it, ping it,
stop it. :class:`~think_kernel.sandbox.sandbox.Sandbox` replaces a launcher that stops
answering::

    launcher = Launcher(spec, on_event)      # on_event(msg) for "spawned" / "exit" lines
    ready = await launcher.start()           # {"ev": "ready", "pid", "preloaded": []}
    await launcher.send({"op": "spawn", ...}, fds)
    alive = await launcher.ping(deadline=1.0)
    await launcher.stop(graceful=True)
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..waits import wait_for
from . import launch
from .config import SandboxConfig
from .review import ViewMount
from .runs import send_line
from .tiers import Tier, find_bwrap


class LauncherError(RuntimeError):
    """The zygote did not start, or went away."""


@dataclass
class LaunchSpec:
    """Everything needed to start a zygote for one session."""

    config: SandboxConfig
    tier: Tier
    workspace: Path
    scratch: Path
    session_id: str
    identity: tuple[int, int] | None  # (uid, gid) of the session's processes, root only
    cgroup_fds: Callable[[], list[int]] = field(default=lambda: [])
    defer_preload: bool = False  # the heavy imports wait for a "preload" or a Python run
    #: Review mode: the view of workspace + proposal the zygote works in.
    view: ViewMount | None = None


class Launcher:
    """One running zygote and its control socket."""

    def __init__(self, spec: LaunchSpec, on_event: Callable[[dict], None]) -> None:
        self.spec = spec
        self.on_event = on_event
        self.proc: asyncio.subprocess.Process | None = None
        self.ctl: socket.socket | None = None
        self.ready_pid: int | None = None  # the zygote's pid in its own pid namespace
        self.stderr: collections.deque[str] = collections.deque(maxlen=50)
        self._ready: asyncio.Future | None = None
        self._pongs: dict[int, asyncio.Future] = {}
        self._ping_ids = itertools.count(1)
        self._tasks: set[asyncio.Task] = set()
        # One line at a time: a line longer than the socket's buffer goes out in pieces, and
        # another sender's line between two of them is a line the zygote cannot read (it
        # exits, and every run of the session dies with it).
        self._sending = asyncio.Lock()

    @property
    def alive(self) -> bool:
        """True while the process runs and the control socket is open."""
        return self.proc is not None and self.proc.returncode is None and self.ctl is not None

    def diag(self) -> str:
        """The zygote's last stderr lines, for error messages."""
        return "zygote stderr: " + ("".join(self.stderr)[-2000:] or "(empty)")

    def _command(self, child_fd: int, cgroup_fds: list[int]) -> list[str]:
        spec = self.spec
        as_root = os.geteuid() == 0
        cmd = [sys.executable, "-I", "-S", str(launch.ZYGOTE)]  # site: see the zygote's main()
        if spec.tier == Tier.BUBBLEWRAP:
            bwrap = (spec.view and spec.view.bwrap) or find_bwrap(spec.config.bwrap_path)
            assert bwrap is not None
            argv = launch.bwrap_argv(bwrap, spec.config, spec.workspace, spec.scratch, as_root,
                                     spec.view)  # fmt: skip
            cmd = argv + cmd
        cmd.append(
            launch.zygote_config(
                spec.config,
                spec.tier,
                spec.workspace,
                spec.scratch,
                child_fd,
                spec.identity,
                cgroup_fds,
                spec.defer_preload,
                spec.view,
            )  # fmt: skip
        )
        return cmd

    def _cwd(self) -> Path:
        view = self.spec.view
        return view.source if view and self.spec.tier != Tier.BUBBLEWRAP else self.spec.workspace

    async def start(self) -> dict:
        """Start the zygote and wait until it is ready (up to 120 s); its heavy preload
        follows in the background (a "preloaded" event)."""
        loop = asyncio.get_running_loop()
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        cg_fds = self.spec.cgroup_fds()
        try:
            cmd = self._command(child.fileno(), cg_fds)
            env = launch.sandbox_env(self.spec.config, self.spec.session_id, self.spec.scratch,
                                     self.spec.tier)  # fmt: skip
            # Root: the zygote starts as uid 0 and keeps only the capabilities it needs to
            # give its children the session uid (LAUNCHER_CAPS); nothing it runs is user code.
            self.proc = await asyncio.create_subprocess_exec(
                *cmd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=str(self._cwd()),
                pass_fds=[child.fileno(), *cg_fds],
                start_new_session=True,
            )
        finally:
            child.close()
            for fd in cg_fds:
                os.close(fd)
        parent.setblocking(False)
        self.ctl = parent
        self._ready = loop.create_future()
        self._spawn_task(self._read_ctl(parent))
        self._spawn_task(self._read_stderr(self.proc))
        try:
            msg = await wait_for(asyncio.shield(self._ready), 120)
        except (TimeoutError, LauncherError) as e:
            raise LauncherError(f"sandbox failed to start: {e}; {self.diag()}") from None
        self.ready_pid = msg.get("pid")
        return msg

    def _spawn_task(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _read_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        while line := await proc.stderr.readline():
            self.stderr.append(line.decode(errors="replace"))

    async def _read_ctl(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        buf = bytearray()
        try:
            while True:
                chunk = await loop.sock_recv(sock, 65536)
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    line, _, rest = bytes(buf).partition(b"\n")
                    buf[:] = rest
                    self._dispatch(json.loads(line))
        except OSError:
            pass
        finally:
            if self._ready is not None and not self._ready.done():
                self._ready.set_exception(LauncherError("zygote exited"))
            if self.ctl is sock:
                self.ctl = None
            for fut in self._pongs.values():
                if not fut.done():
                    fut.set_result(False)
            sock.close()
            self.on_event({"ev": "gone"})

    def _dispatch(self, msg: dict) -> None:
        ev = msg.get("ev")
        if ev == "ready":
            if self._ready is not None and not self._ready.done():
                self._ready.set_result(msg)
        elif ev == "pong":
            fut = self._pongs.pop(msg.get("n", -1), None)
            if fut is not None and not fut.done():
                fut.set_result(True)
        else:
            self.on_event(msg)

    async def send(self, obj: dict, fds: Sequence[int] = ()) -> None:
        """Send one control line (with fds), after any line on its way; OSError if the
        zygote is gone."""
        async with self._sending:
            sock = self.ctl
            if sock is None:
                raise OSError("the sandbox launcher is gone")
            await send_line(sock, obj, fds)

    async def ping(self, deadline: float) -> bool:
        """True if the zygote answers a ping within ``deadline`` seconds."""
        n = next(self._ping_ids)
        fut = asyncio.get_running_loop().create_future()
        self._pongs[n] = fut
        try:
            await self.send({"op": "ping", "n": n})
            return bool(await wait_for(fut, deadline))
        except (TimeoutError, OSError):
            return False
        finally:
            self._pongs.pop(n, None)

    def host_pid(self) -> int | None:
        """The zygote's pid as the kernel sees it (inside bwrap it has another one)."""
        if self.proc is None:
            return None
        if self.spec.tier != Tier.BUBBLEWRAP:
            return self.proc.pid
        for pid in descendants(self.proc.pid):
            try:
                with open(f"/proc/{pid}/status") as f:
                    for line in f:
                        if line.startswith("NSpid:"):
                            if line.split()[-1] == str(self.ready_pid) and len(line.split()) > 2:
                                return pid
                            break
            except OSError:
                continue
        return None

    async def stop(self, graceful: bool, kill_session: Callable[[], None]) -> None:
        """Stop the zygote: ``graceful`` lets it kill its runs on EOF first (2 s); then
        ``kill_session`` (run in a thread) kills whatever is left of the session."""
        proc, ctl = self.proc, self.ctl
        self.ctl = None
        if ctl is not None:
            with contextlib.suppress(OSError):
                ctl.shutdown(socket.SHUT_RDWR)  # EOF: the zygote kills its runs and exits
        if proc is None:
            return
        if graceful:
            with contextlib.suppress(TimeoutError):
                await wait_for(proc.wait(), 2)
        # Orphans of runs are not in the zygote's process group: kill the session by cgroup,
        # uid or process tree (what kill_session knows), then bwrap or the zygote's group.
        await asyncio.to_thread(kill_session)
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)


def descendants(root: int) -> list[int]:
    """Every live descendant of ``root`` (one scan of /proc; order: parents first)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        except (OSError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out
