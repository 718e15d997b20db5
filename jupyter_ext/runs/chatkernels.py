"""The think kernels of chat sessions: one per session, taken from a pool of pre-started
spares, culled when idle, restarted on demand.

    pool = ChatKernels(kernel_manager, "think", kernel_env=lambda: {...}, pool_size=1)
    pool.adopt(kernel_id)                  # a spare the server started early (optional)
    pool.start()                           # fill the pool in the background
    kernel_id = await pool.ensure(session_id)
    pool.touch(session_id)                 # the session did something (delays culling)
    await pool.forget(session_id)          # the session is deleted
    await pool.close()

A spare is a think kernel that has started, answered ``kernel_info`` and connected its link,
but serves no session yet: it holds no session id, no sandbox and no uid. ``ensure`` hands a
ready spare to exactly one session (it leaves the pool at once, so two sessions can never get
the same kernel); the kernel binds to the session on its first ``chat`` frame, and only then
starts its sandbox under a uid of its own. A spare that died is dropped and replaced.

A claimed kernel gets a jupyter_server session named after the chat (so JupyterLab's Running
panel shows "Think: <title>", not "No sessions connected"). A session's kernel that has done
nothing for ``idle_timeout`` seconds (and has no run) is shut down; the next message starts
or claims another. Spares are not user kernels: they are never culled here. With a memory
``budget`` (``budget.py``), a tree past it starts no spare, and its idle chats hibernate,
least recently used first, until it is under the budget again.

With ``sessions_per_kernel`` above 1 a claimed kernel is a host (``think_kernel/kernel/host.py``):
a new or waking chat joins a live host with room before it takes a spare, so it needs no
kernel start and adds no process. A host's idle chat hibernates alone: ``release(kernel_id,
session_id)`` tells the kernel to close that session's runtime and sandbox. A host left
with no chat is shut down. A host that dies takes its chats' workers with it; each chat
learns so at its next message (``take_restart``) and joins another host.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable
from typing import Any

from think_kernel.waits import wait_for

from .budget import MemoryBudget

log = logging.getLogger(__name__)
JUPYTER_SESSION_TYPE = "think-chat"
BUDGET_INTERVAL = 2.0  # s between two checks of the memory budget (when one is set)


class ChatKernels:
    """Session id -> think kernel, through jupyter_server's kernel and session managers."""

    def __init__(
        self,
        kernel_manager: Any,
        kernel_name: str = "think",
        kernel_env: Callable[[], dict[str, str]] = dict,
        *,
        pool_size: int = 1,
        idle_timeout: float = 1800.0,
        start_timeout: float = 60.0,
        session_manager: Any = None,
        title_of: Callable[[str], Awaitable[str]] | None = None,
        linked: Callable[[str], Awaitable[Any]] | None = None,
        busy: Callable[[str], bool] = lambda session_id: False,
        refill_delay: float = 1.0,
        sessions_per_kernel: int = 1,
        release: Callable[[str, str], Any] | None = None,
        budget: MemoryBudget | None = None,
    ) -> None:
        self.kernel_manager = kernel_manager
        self.kernel_name = kernel_name
        self.kernel_env = kernel_env
        self.pool_size = max(0, pool_size)
        self.idle_timeout = idle_timeout
        self.start_timeout = start_timeout
        self.session_manager = session_manager
        self.title_of = title_of
        self.linked = linked
        self.busy = busy
        self.refill_delay = refill_delay  # s between a claim and the start of its successor
        self.sessions_per_kernel = max(1, sessions_per_kernel)
        self.release = release  # tells a host to close one session's runtime
        self.budget = budget  # past it: no new spare, idle chats hibernate
        self.kernels: dict[str, str] = {}  # session id -> kernel id
        self.last_used: dict[str, float] = {}  # session id -> time.monotonic()
        self.culled = 0  # kernels shut down for idleness (shown in the API)
        #: Sessions whose kernel (and warm Python worker) was given back or died since their
        #: last run: their next run is told so (see ``take_restart``).
        self.restarted: set[str] = set()
        #: Kernels that said their runtime, store, sandbox and model client are ready.
        self.prepared: set[str] = set()
        self._jupyter_sessions: dict[str, str] = {}  # session id -> jupyter_server session id
        self._naming: set[str] = set()  # sessions whose name is being written
        self._spares: list[asyncio.Task[str]] = []  # starting or ready, oldest first
        self._locks: dict[str, asyncio.Lock] = {}
        self._assigning = asyncio.Lock()  # a host's chats: one picks its kernel at a time
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        self._failures = 0
        self._stopping: set[asyncio.Future[Any]] = set()

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Fill the pool and start the idle culler (both in the background)."""
        self.refill()
        if self.idle_timeout > 0 or (self.budget is not None and self.budget.limit_mb):
            self._spawn(self._cull_loop())

    async def close(self) -> None:
        """Stop refilling and culling; shut the spares down, and the sessions' kernels
        without an interrupt (the server stops: their runs go on at its next start)."""
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        spares, self._spares = self._spares, []
        for task in spares:
            if task.done() and not task.cancelled() and task.exception() is None:
                await self._shutdown_kernel(task.result())
            else:
                task.cancel()
        await asyncio.gather(*self._tasks, *spares, return_exceptions=True)
        while self._stopping:  # a discarded start adds its shutdown when it ends
            await asyncio.gather(*list(self._stopping), return_exceptions=True)
        await asyncio.gather(
            *(self._stop_quietly(kid) for kid in set(self.kernels.values())),
            return_exceptions=True,
        )

    # -- API ---------------------------------------------------------------------------------

    def session_of(self, kernel_id: str) -> str | None:
        """The chat session a kernel serves, if any."""
        for sid, kid in self.kernels.items():
            if kid == kernel_id:
                return sid
        return None

    def touch(self, session_id: str) -> None:
        """The session did something now: its kernel's idle time starts again."""
        if session_id in self.kernels:
            self.last_used[session_id] = time.monotonic()

    @property
    def spares_ready(self) -> int:
        """Spares that a session could take at once."""
        return sum(1 for t in self._spares if t.done() and not t.cancelled() and not t.exception())

    def spare_ids(self) -> list[str]:
        """Kernel ids of the ready spares."""
        return [
            t.result()
            for t in self._spares
            if t.done() and not t.cancelled() and t.exception() is None
        ]

    async def ensure(self, session_id: str) -> str:
        """The session's live think kernel: its own, else a spare, else a new one."""
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:
            kid = self.kernels.get(session_id)
            if kid is not None and await self.alive(kid):
                self.touch(session_id)
                self._spawn(self._name(session_id, kid))
                return kid
            if kid is not None:
                self.restarted.add(session_id)  # died: its worker's state went with it
                await self._shutdown(session_id)
            if self.sessions_per_kernel > 1:
                # One chat at a time picks its host: chats that arrive together share the
                # spare the first one claims, instead of each taking a kernel.
                async with self._assigning:
                    kid = await self._host_with_room() or await self._claim_and_refill()
                    self.kernels[session_id] = kid
            else:
                kid = self.kernels[session_id] = await self._claim_and_refill()
            self.touch(session_id)
            # Off the run's path: the name is a nicety (jupyter_server's session store).
            self._spawn(self._name(session_id, kid))
            return kid

    async def _claim_and_refill(self) -> str:
        kid = await self._claim()
        # The next spare starts a moment later: a kernel start takes a core for most of a
        # second, which the claimed kernel's first run needs now.
        self._spawn(self._refill_after(self.refill_delay))
        return kid

    def sessions_on(self, kernel_id: str) -> list[str]:
        """The chat sessions a kernel serves now."""
        return [sid for sid, kid in self.kernels.items() if kid == kernel_id]

    async def _host_with_room(self) -> str | None:
        """A live kernel that serves chats and has room for one more (the fullest first, so
        that hosts empty out and go); None when sessions do not share kernels."""
        if self.sessions_per_kernel <= 1:
            return None
        counts: dict[str, int] = {}
        for kid in self.kernels.values():
            counts[kid] = counts.get(kid, 0) + 1
        for kid, n in sorted(counts.items(), key=lambda kv: -kv[1]):
            if n < self.sessions_per_kernel and await self.alive(kid):
                return kid
        return None

    def hibernating(self, session_id: str) -> bool:
        """Whether the session holds no kernel now (it wakes on a spare at its next run)."""
        return session_id not in self.kernels

    def take_restart(self, session_id: str) -> bool:
        """Whether the session's kernel was given back or lost since its last run (once)."""
        if session_id in self.restarted:
            self.restarted.discard(session_id)
            return True
        return False

    async def alive(self, kernel_id: str) -> bool:
        """Whether the kernel process is still running."""
        try:
            kernel = self.kernel_manager.get_kernel(kernel_id)
        except Exception:  # KeyError, or jupyter_server's HTTPError(404)
            return False
        try:
            return bool(await kernel.is_alive())
        except Exception:
            return False

    async def forget(self, session_id: str) -> None:
        """Shut the session's kernel down (the session is being deleted)."""
        await self._shutdown(session_id)
        self._locks.pop(session_id, None)
        self.restarted.discard(session_id)

    async def cull(self) -> list[str]:
        """Shut down the kernels of sessions idle for ``idle_timeout`` s; returns those ids."""
        now = time.monotonic()
        culled = []
        for sid in list(self.kernels):
            if self.busy(sid) or now - self.last_used.get(sid, now) < self.idle_timeout:
                continue
            if await self._hibernate(sid):
                culled.append(sid)
        return culled

    async def relieve(self) -> list[str]:
        """Over the memory budget: hibernate idle chats, least recently used first, until
        under it or none is idle; returns the ids hibernated."""
        relieved: list[str] = []
        while self.budget is not None and self.budget.over():
            idle = [sid for sid in self.kernels if not self.busy(sid)]
            idle.sort(key=lambda sid: self.last_used.get(sid, 0.0))
            for sid in idle:
                if await self._hibernate(sid):
                    log.info("Think: over the memory budget; chat session %s hibernates", sid)
                    relieved.append(sid)
                    break
            else:
                return relieved  # every chat is at work: nothing to give back now
        return relieved

    async def _hibernate(self, sid: str) -> bool:
        lock = self._locks.setdefault(sid, asyncio.Lock())
        if lock.locked() or sid not in self.kernels:
            return False  # being claimed or restarted right now
        async with lock:
            log.info("Think: culling the idle kernel of chat session %s", sid)
            self.culled += 1
            self.restarted.add(sid)
            await self._shutdown(sid)
        return True

    # -- the pool ----------------------------------------------------------------------------

    def adopt(self, kernel_id: str) -> None:
        """Take a think kernel started outside the pool (the server's early spare) as a
        spare: ready once it answers and links, shut down if it does not in time."""

        async def ready() -> str:
            try:
                await wait_for(self._ready(kernel_id), self.start_timeout)
            except BaseException:
                await self._shutdown_kernel(kernel_id)
                raise
            return kernel_id

        task = asyncio.ensure_future(ready())
        task.add_done_callback(self._spare_done)
        self._spares.insert(0, task)

    async def _refill_after(self, delay: float) -> None:
        await asyncio.sleep(delay)
        self.refill()

    def refill(self) -> None:
        """Start spares until ``pool_size`` are ready or starting."""
        self._spares = [t for t in self._spares if not (t.done() and self._failed(t))]
        if len(self._spares) < self.pool_size and self.budget is not None and self.budget.over():
            return  # no room for another kernel: a chat then starts one when it needs it
        while not self._closed and len(self._spares) < self.pool_size:
            task = asyncio.ensure_future(self._start_spare())
            task.add_done_callback(self._spare_done)
            self._spares.append(task)

    def _spare_done(self, task: asyncio.Task[str]) -> None:
        if self._failed(task) and task in self._spares and not self._closed:
            self.refill()  # replace it (after a backoff: see _start_spare)

    @staticmethod
    def _failed(task: asyncio.Task[str]) -> bool:
        return task.cancelled() or task.exception() is not None

    async def _start_spare(self) -> str:
        # After a failed start, wait before the next one (a broken kernelspec must not spin).
        if self._failures:
            await asyncio.sleep(min(60.0, 2.0 ** min(self._failures, 6)))
        try:
            kid = await self._start_kernel()
        except asyncio.CancelledError:
            raise
        except Exception:
            self._failures += 1
            log.warning("Think: a spare chat kernel failed to start", exc_info=True)
            raise
        self._failures = 0
        return kid

    async def _claim(self) -> str:
        """A kernel no session has: the oldest ready spare, else the oldest starting one,
        else a new kernel. It leaves the pool before anyone else can see it."""
        while True:
            ready = sorted(
                (t for t in self._spares if t.done()),
                key=lambda t: not (not self._failed(t) and t.result() in self.prepared),
            )
            task = ready[0] if ready else (self._spares[0] if self._spares else None)
            if task is None:
                return await self._start_kernel()
            self._spares.remove(task)
            try:
                kid = await asyncio.shield(task)
            except asyncio.CancelledError:
                if not task.cancelled():
                    # Our caller was cancelled, not the start: put it back in the pool.
                    self._spares.insert(0, task)
                raise
            except Exception:
                continue  # that spare failed: try the next (or start one)
            if await self.alive(kid):
                return kid
            await self._shutdown_kernel(kid)  # died while waiting: drop it

    async def _start_kernel(self) -> str:
        """Start a kernel and wait until it answers and its link is up."""
        env = {**os.environ, **self.kernel_env()}
        # Chat kernels start at the server root: workspace paths and the default store
        # location then agree with the server's.
        start = asyncio.ensure_future(
            self.kernel_manager.start_kernel(kernel_name=self.kernel_name, path="", env=env)
        )
        try:
            kid = str(await asyncio.shield(start))
        except asyncio.CancelledError:
            # Never cut a start in half either (close() cancels the spares): jupyter_client
            # lists a kernel that is still starting, and jupyter_server's shutdown_all then
            # fails on it and the server never exits. It becomes a kernel, then goes.
            self._track_stop(self._discard(start))
            raise
        try:
            await wait_for(self._ready(kid), self.start_timeout)
        except BaseException:
            await self._shutdown_kernel(kid)
            raise
        return kid

    async def _ready(self, kid: str) -> None:
        # A kernel_info round trip: the kernel answers on shell, and its status messages on
        # iopub move jupyter_server's execution_state from "starting" to "idle".
        kernel = self.kernel_manager.get_kernel(kid)
        client = kernel.client()
        client.start_channels(shell=True, iopub=False, stdin=False, hb=False, control=False)
        try:
            msg_id = client.kernel_info()
            while True:
                reply = await client.get_shell_msg()
                if reply["parent_header"].get("msg_id") == msg_id:
                    break
        finally:
            client.stop_channels()
        if getattr(kernel, "execution_state", "") == "starting":
            # It answered: it is idle. (jupyter_server learns the state from status messages
            # on iopub; its watcher may have subscribed after this round trip's went out.)
            kernel.execution_state = "idle"
        if self.linked is not None:
            await self.linked(kid)

    # -- names in JupyterLab -----------------------------------------------------------------

    async def _name(self, session_id: str, kid: str) -> None:
        """Keep a jupyter_server session named after the chat on its kernel."""
        sm = self.session_manager
        if sm is None or session_id in self._naming:
            return  # one at a time per session (two would both create a session)
        self._naming.add(session_id)
        try:
            await self._name_now(sm, session_id, kid)
        finally:
            self._naming.discard(session_id)

    async def _name_now(self, sm: Any, session_id: str, kid: str) -> None:
        title = ""
        if self.title_of is not None:
            with contextlib.suppress(Exception):
                title = await self.title_of(session_id)
        name = f"Think: {title or 'chat ' + session_id}"[:200]
        jsid = self._jupyter_sessions.get(session_id)
        try:
            if jsid is not None:
                model = await sm.get_session(session_id=jsid)
                if model["kernel"]["id"] == kid:
                    if model.get("name") != name:
                        await sm.update_session(jsid, name=name)
                    return
            model = await sm.create_session(
                path=f"think-chats/{session_id}",
                name=name,
                type=JUPYTER_SESSION_TYPE,
                kernel_name=self.kernel_name,
                kernel_id=kid,
            )
            self._jupyter_sessions[session_id] = model["id"]
        except Exception:  # a name is a nicety: never fail a run for it
            log.debug("could not name the kernel of %s", session_id, exc_info=True)

    # -- shutting down -----------------------------------------------------------------------

    async def _shutdown(self, session_id: str) -> None:
        kid = self.kernels.pop(session_id, None)
        self.last_used.pop(session_id, None)
        if kid is not None and self.sessions_on(kid):
            # A host that serves other chats stays: only this session's runtime goes. (Its
            # name in JupyterLab stays too: jupyter_server deletes a session only with its
            # kernel.)
            if self.release is not None:
                self.release(kid, session_id)
            return
        jsid = self._jupyter_sessions.pop(session_id, None)
        if kid is not None:
            await self._shutdown_kernel(kid)
        if jsid is not None and self.session_manager is not None:
            # The kernel is gone: jupyter_server drops a session row whose kernel is missing
            # when it next reads it.
            with contextlib.suppress(Exception):
                await self.session_manager.get_session(session_id=jsid)

    def _track_stop(self, coro: Awaitable[Any]) -> asyncio.Future[Any]:
        """Run ``coro`` to its end whatever is cancelled meanwhile; close() waits for it."""
        stop = asyncio.ensure_future(coro)
        self._stopping.add(stop)
        stop.add_done_callback(self._stopping.discard)
        return stop

    async def _discard(self, start: asyncio.Future[Any]) -> None:
        """Shut down the kernel a start no one waits for any more ends with."""
        try:
            kid = str(await start)
        except Exception:
            return  # it did not start: nothing to shut down
        await self._shutdown_kernel(kid)

    async def _shutdown_kernel(self, kid: str) -> None:
        self.prepared.discard(kid)
        # Never cut a shutdown in half (close() cancels the culler): jupyter_client would keep
        # a half-removed kernel that its shutdown_all then fails on. close() waits for these.
        stop = self._track_stop(self.kernel_manager.shutdown_kernel(kid, now=True))
        try:
            await asyncio.shield(stop)
        except asyncio.CancelledError:
            raise
        except Exception:  # already gone
            log.debug("kernel %s did not shut down cleanly", kid, exc_info=True)

    async def _stop_quietly(self, kid: str) -> None:
        """Shut a session's kernel down with its shutdown request alone.

        jupyter_client interrupts a kernel before it shuts it down, and to a think kernel an
        interrupt is a person's Stop: it cancels the run and rejects its pending approvals.
        A server that stops is no Stop: its runs must stay as a crash leaves them, for the
        next start to resume (the kernel's shutdown leaves them so). jupyter_server's own
        shutdown of the kernel then finds no process to interrupt.
        """
        try:
            kernel = self.kernel_manager.get_kernel(kid)
        except Exception:  # already gone
            return
        try:
            kernel.stop_restarter()  # its exit is no death to recover from
            await kernel.request_shutdown()
            wait = max(1.0, float(getattr(kernel, "shutdown_wait_time", 5.0)))
            try:
                await wait_for(self._exited(kernel), wait)
            except TimeoutError:
                # Stuck: kill it as a crash would, never interrupt it.
                log.warning("Think: kernel %s did not shut down in time; killing it", kid)
                await kernel.signal_kernel(signal.SIGKILL)
                await wait_for(self._exited(kernel), wait)
        except Exception:
            log.debug("kernel %s did not shut down quietly", kid, exc_info=True)
        await self._shutdown_kernel(kid)  # its resources, and out of jupyter_server's list

    @staticmethod
    async def _exited(kernel: Any) -> None:
        # jupyter_client has no event for a kernel's exit (its finish_shutdown polls too);
        # its provisioner's wait() would forget the process, and the shutdown that follows
        # then fails to "interrupt" a kernel it no longer has.
        while await kernel.is_alive():  # noqa: ASYNC110
            await asyncio.sleep(0.05)

    async def _cull_loop(self) -> None:
        interval = max(0.05, min(60.0, self.idle_timeout / 4)) if self.idle_timeout > 0 else 60.0
        if self.budget is not None and self.budget.limit_mb:
            interval = min(interval, BUDGET_INTERVAL)
        while True:
            await asyncio.sleep(interval)
            try:
                if self.idle_timeout > 0:
                    await self.cull()
                await self.relieve()
            except Exception:
                log.exception("Think: culling idle chat kernels failed")

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
