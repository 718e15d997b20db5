"""The per-session sandbox: one zygote, one warm worker, any number of fresh runs."""

from __future__ import annotations

import array
import asyncio
import collections
import contextlib
import inspect
import itertools
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import launch
from .config import SandboxConfig
from .loopback import LoopbackHandler, LoopbackServer
from .result import ExecResult, OutputBuffer, classify
from .tiers import TIER3_WARNING, Tier, available_tiers, find_bwrap

OutputCallback = Callable[[str, str], Awaitable[None] | None]

_EXIT_GRACE = 1.0  # seconds to wait for pipes to close after the process is gone
_KILL_GRACE = 3.0  # seconds to wait for the zygote to report a killed run


class SandboxError(RuntimeError):
    """The sandbox cannot run code (tier below ``required_tier``, zygote failed, closed)."""


@dataclass(eq=False)
class _Run:
    id: int
    kind: str
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)
    pid: int | None = None
    exit: dict | None = None
    kill_reason: str | None = None
    chan: socket.socket | None = None
    chan_closed: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)


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
        self._ids = itertools.count(1)
        self._runs: dict[int, _Run] = {}
        self._active: set[_Run] = set()
        self._tasks: set[asyncio.Task] = set()
        self._warm: _Run | None = None
        self._warm_lock = asyncio.Lock()
        self._zygote_lock = asyncio.Lock()
        self._send_lock = asyncio.Lock()
        self._proc: asyncio.subprocess.Process | None = None
        self._ctl: socket.socket | None = None
        self._ready: asyncio.Future | None = None
        self._stderr: collections.deque[str] = collections.deque(maxlen=50)
        self._closed = False
        self.preloaded: list[str] = []
        as_root = os.geteuid() == 0
        self._drop = (config.sandbox_uid, config.sandbox_gid) if as_root else None

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    async def create(
        cls, workspace_root: Path, session_id: str, config: SandboxConfig | None = None
    ) -> Sandbox:
        """Pick the tier, prepare workspace access and start the zygote."""
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
            await asyncio.to_thread(self._prepare_dirs)
            await self._start_zygote()
        except BaseException:
            await self.close()
            raise
        return self

    def _prepare_dirs(self) -> None:
        for sub in ("home", "tmp"):
            (self.scratch / sub).mkdir(exist_ok=True)
        launch.protect(self.workspace)
        if self._drop is None:
            return
        uid, gid = self._drop
        for p in (self.scratch, self.scratch / "home", self.scratch / "tmp"):
            os.chown(p, uid, gid)
        if self.config.grant_acl:
            launch.ensure_search(self.scratch, uid, gid)
            launch.grant_tree(self.workspace, uid, gid)
            if self.tier != Tier.BUBBLEWRAP:  # tier 1 re-binds these under a readable tmpfs
                for needed in [*launch.python_paths(), str(launch.INSIDE_DIR)]:
                    launch.ensure_search(Path(needed) / "x", uid, gid)

    async def _start_zygote(self) -> None:
        loop = asyncio.get_running_loop()
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        child.set_inheritable(True)
        as_root = os.geteuid() == 0
        cmd = [sys.executable, "-I", str(launch.ZYGOTE)]
        kwargs: dict[str, Any] = {}
        zy_drop = None
        if self.tier == Tier.BUBBLEWRAP:
            bwrap = find_bwrap(self.config.bwrap_path)
            assert bwrap is not None
            cmd = launch.bwrap_argv(bwrap, self.config, self.workspace, self.scratch, as_root)
            cmd += [sys.executable, "-I", str(launch.ZYGOTE)]
            zy_drop = self._drop
        elif self._drop is not None:
            kwargs = {"user": self._drop[0], "group": self._drop[1], "extra_groups": []}
        cmd.append(
            launch.zygote_config(
                self.config, self.tier, self.workspace, self.scratch, child.fileno(), zy_drop
            )
        )
        env = launch.sandbox_env(self.config, self.session_id, self.scratch, self.tier)
        self._proc = await asyncio.create_subprocess_exec(
            *cmd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=str(self.workspace),
            pass_fds=[child.fileno()],
            start_new_session=True,
            **kwargs,
        )
        child.close()
        parent.setblocking(False)
        self._ctl = parent
        self._ready = loop.create_future()
        self._spawn_task(self._read_ctl(parent))
        self._spawn_task(self._read_zygote_stderr(self._proc))
        try:
            msg = await asyncio.wait_for(asyncio.shield(self._ready), 120)
        except (TimeoutError, SandboxError) as e:
            raise SandboxError(f"sandbox failed to start: {e}; {self._diag()}") from None
        self.preloaded = msg.get("preloaded", [])

    async def _ensure_zygote(self) -> None:
        if self._closed:
            raise SandboxError("sandbox is closed")
        async with self._zygote_lock:
            if self._proc is not None and self._proc.returncode is None and self._ctl:
                return
            await self._stop_zygote()
            await self._start_zygote()

    def _spawn_task(self, coro: Any) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _diag(self) -> str:
        return "zygote stderr: " + ("".join(self._stderr)[-2000:] or "(empty)")

    async def _read_zygote_stderr(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stderr is not None
        while line := await proc.stderr.readline():
            self._stderr.append(line.decode(errors="replace"))

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
                    self._on_ctl(json.loads(line))
        except OSError:
            pass
        finally:
            # The zygote is gone: every run it owned is dead too.
            if self._ready is not None and not self._ready.done():
                self._ready.set_exception(SandboxError("zygote exited"))
            if self._ctl is sock:
                self._ctl = None
            for run in list(self._runs.values()):
                self._on_ctl({"ev": "exit", "id": run.id, "code": None, "signal": None,
                              "lost": True})  # fmt: skip
            sock.close()

    def _on_ctl(self, msg: dict) -> None:
        ev = msg.get("ev")
        if ev == "ready":
            if self._ready is not None and not self._ready.done():
                self._ready.set_result(msg)
            return
        run = self._runs.get(msg.get("id", -1))
        if run is None:
            return
        if ev == "spawned":
            run.pid = msg["pid"]
        elif ev == "exit":
            self._runs.pop(run.id, None)
            run.exit = msg
            run.queue.put_nowait(("exit", msg, b""))
            if run is self._warm:
                self._warm = None

    async def _send(self, sock: socket.socket, obj: dict, fds: Sequence[int] = ()) -> None:
        data = json.dumps(obj).encode() + b"\n"
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
        loop = asyncio.get_running_loop()
        while True:
            try:
                n = sock.sendmsg([data], anc)
                break
            except BlockingIOError:
                await asyncio.sleep(0.001)
        if n < len(data):
            await loop.sock_sendall(sock, data[n:])

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
    ) -> ExecResult:
        """Run Python in the warm worker (state persists) or, with ``fresh``, in a new process."""
        if fresh:
            return await self._run_child("python", {"code": code}, timeout, on_output)
        async with self._warm_lock:
            return await self._run_warm(code, timeout, on_output)

    async def run_bash(
        self,
        command: str,
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (see run_python)
        on_output: OutputCallback | None = None,
    ) -> ExecResult:
        """Run a bash command line in a fresh sandboxed process."""
        return await self._run_child("bash", {"command": command}, timeout, on_output)

    async def interrupt(self) -> None:
        """Kill every running cell's process group and wait until they are gone."""
        runs = [r for r in self._active if r.exit is None]
        for run in runs:
            await self._kill(run, "interrupted")
        if runs:
            await asyncio.wait([asyncio.ensure_future(r.done.wait()) for r in runs], timeout=5)

    async def close(self) -> None:
        """Kill everything and remove the scratch dir. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        await self._stop_zygote()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        await asyncio.to_thread(shutil.rmtree, self.scratch, True)

    async def __aenter__(self) -> Sandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ------------------------------------------------------------------ internals

    async def _stop_zygote(self) -> None:
        proc, ctl = self._proc, self._ctl
        self._proc, self._ctl, self._warm = None, None, None
        if ctl is not None:
            with contextlib.suppress(OSError):
                ctl.shutdown(socket.SHUT_RDWR)  # EOF: the zygote kills its runs and exits
        if proc is None:
            return
        try:
            await asyncio.wait_for(proc.wait(), 2)
        except TimeoutError:
            pass
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)  # bwrap or the zygote, and its group
        await proc.wait()

    async def _kill(self, run: _Run, reason: str) -> None:
        if run.kill_reason is None:
            run.kill_reason = reason
        if self._ctl is not None:
            with contextlib.suppress(OSError):
                await self._send(self._ctl, {"op": "kill", "id": run.id})

    async def _kill_cancelled(self, run: _Run) -> None:
        """The awaiting task was cancelled (Stop): kill the run's process group, wait for it."""
        await self._kill(run, "interrupted")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _KILL_GRACE
        while run.exit is None and loop.time() < deadline:
            try:
                await asyncio.wait_for(run.queue.get(), deadline - loop.time())
            except TimeoutError:
                break

    def _timeout(self, timeout: float | None) -> float:
        t = self.config.timeout if timeout is None or timeout <= 0 else timeout
        return min(float(t), float(self.config.max_timeout))

    def _pipes(self, run: _Run, names: tuple[str, ...] = ("stdout", "stderr")) -> list[int]:
        """Make one pipe per stream read by the event loop; return the write ends."""
        loop = asyncio.get_running_loop()
        writers = []
        # Bind to the queue of *this* cell: a warm worker gets a new queue per cell, and the
        # EOF of an earlier pipe must not end a later cell early.
        queue = run.queue
        for name in names:
            r, w = os.pipe2(os.O_CLOEXEC)
            os.set_blocking(r, False)

            def on_readable(fd: int = r, stream: str = name) -> None:
                try:
                    while data := os.read(fd, 65536):
                        queue.put_nowait(("out", stream, data))
                        if queue.qsize() > 64:
                            return  # let the consumer catch up; we are called again
                except BlockingIOError:
                    return
                except OSError:
                    pass
                loop.remove_reader(fd)
                os.close(fd)
                queue.put_nowait(("eof", stream, b""))

            loop.add_reader(r, on_readable)
            writers.append(w)
        return writers

    def _serve_channel(self, run: _Run, sock: socket.socket) -> None:
        async def reader() -> None:
            loop = asyncio.get_running_loop()
            sock.setblocking(False)
            buf = bytearray()
            try:
                while chunk := await loop.sock_recv(sock, 1 << 20):
                    buf += chunk
                    while b"\n" in buf:
                        line, _, rest = bytes(buf).partition(b"\n")
                        buf[:] = rest
                        run.queue.put_nowait(("msg", json.loads(line), b""))
            except (OSError, ValueError):
                pass
            finally:
                run.chan_closed = True
                run.queue.put_nowait(("chan_eof", "", b""))
                sock.close()

        run.chan = sock
        self._spawn_task(reader())

    async def _spawn(self, kind: str, payload: dict) -> tuple[_Run, list[int]]:
        await self._ensure_zygote()
        run = _Run(next(self._ids), kind)
        out_w, err_w = self._pipes(run)
        chan_k, chan_c = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        loop_k, loop_c = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._spawn_task(self.loopback.serve(loop_k))
        fds = [out_w, err_w, chan_c.fileno(), loop_c.fileno()]
        self._runs[run.id] = run
        msg = {"op": "spawn", "id": run.id, "kind": kind, "limits": self.config.limits()}
        try:
            assert self._ctl is not None
            await self._send(self._ctl, {**msg, **payload}, fds)
        finally:
            os.close(out_w)
            os.close(err_w)
            chan_c.close()
            loop_c.close()
        self._serve_channel(run, chan_k)
        return run, fds

    async def _run_child(
        self, kind: str, payload: dict, limit: float | None, on_output: OutputCallback | None
    ) -> ExecResult:
        start = time.perf_counter()
        run, _ = await self._spawn(kind, payload)
        self._active.add(run)
        try:
            res = await self._collect(run, self._timeout(limit), on_output, need_exit=True)
        except asyncio.CancelledError:
            await asyncio.shield(self._kill_cancelled(run))
            raise
        finally:
            self._active.discard(run)
            run.done.set()
        return self._finish(res, start)

    async def _run_warm(
        self, code: str, limit: float | None, on_output: OutputCallback | None
    ) -> ExecResult:
        start = time.perf_counter()
        warm = self._warm
        if warm is None or warm.exit is not None or warm.chan is None or warm.chan_closed:
            if warm is not None and warm.exit is None:
                await self._kill(warm, "stale")
            warm, _ = await self._spawn("warm", {})
            self._warm = warm
        cell = warm
        cell.queue = asyncio.Queue()
        cell.done = asyncio.Event()
        # Drop stale channel events (there are none unless the worker misbehaved).
        out_w, err_w = self._pipes(cell)
        try:
            assert cell.chan is not None
            await self._send(
                cell.chan, {"code": code, "cpu_seconds": self.config.cpu_seconds}, [out_w, err_w]
            )
        except OSError:
            cell.queue.put_nowait(("chan_eof", "", b""))
        finally:
            os.close(out_w)
            os.close(err_w)
        self._active.add(cell)
        try:
            res = await self._collect(cell, self._timeout(limit), on_output, need_exit=False)
        except asyncio.CancelledError:
            if self._warm is cell:
                self._warm = None  # the next cell gets a fresh worker
            await asyncio.shield(self._kill_cancelled(cell))
            raise
        finally:
            self._active.discard(cell)
            cell.done.set()
        if cell.exit is not None or cell.kill_reason or cell.chan_closed:
            if cell.exit is None:
                await self._kill(cell, "stale")
            self._warm = None
            res.warnings.append("the warm Python worker was restarted: earlier variables are gone")
        return self._finish(res, start)

    def _finish(self, res: ExecResult, start: float) -> ExecResult:
        res.duration_ms = (time.perf_counter() - start) * 1000
        if self.tier == Tier.RLIMITS:
            res.warnings.insert(0, TIER3_WARNING)
        return res

    async def _collect(
        self, run: _Run, limit: float, on_output: OutputCallback | None, need_exit: bool
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

        async def emit(stream: str, text: str) -> None:
            if on_output is not None and text:
                r = on_output(stream, text)
                if inspect.isawaitable(r):
                    await r

        while True:
            # A warm cell ends with its result; anything else ends when the process is reaped.
            ended = run.exit is not None or (not need_exit and result is not None)
            # A fresh Python run reports on its channel: wait for that too (it may trail exit).
            # (Count the queued "chan_eof" event, not run.chan_closed: the result message sits
            # before it in the queue.)
            reported = run.kind != "python" or chan_eof
            if ended and len(eofs) == 2 and reported:
                break
            if ended and not grace_set:
                deadline = min(deadline, loop.time() + _EXIT_GRACE) if run.exit else deadline
                grace_set = True
            try:
                kind, a, b = await asyncio.wait_for(run.queue.get(), max(0, deadline - loop.time()))
            except TimeoutError:
                if ended:
                    break  # something kept our pipes open; give up on them
                if run.kill_reason is None:
                    await self._kill(run, "timeout")
                    deadline = loop.time() + _KILL_GRACE
                    continue
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
            # "exit" only wakes us up: run.exit holds it.
        for stream in ("stdout", "stderr"):
            await emit(stream, out.feed(stream, b"", final=True))
        return classify(
            kind=run.kind,
            exit=run.exit,
            kill_reason=run.kill_reason,
            report=result,
            out=out,
            outputs=outputs,
            limit=limit,
            diag=self._diag,
        )
