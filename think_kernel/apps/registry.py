"""A kernel's live apps, by session: started and waited for, listed, restarted, stopped,
recorded in the store and sent to the server.

    apps = Apps(AppsConfig(), start_sandbox)
    app = await apps.start("s_1", "python -m think_app site", "site")  # answers HTTP now
    apps.get("s_1", "site").describe()
    await apps.restart("s_1", "site")
    await apps.stop("s_1", "site")
    await apps.stop_run("r_1")               # the chat's Stop: the apps that run started
    await apps.close()                       # the kernel ends: every app stops

An app is a background process of the session's sandbox (the job machinery of
``think_kernel/jobs``: the same uid, tier, cgroup and limits, a bounded log) that serves HTTP
on a socket the kernel made for it (:mod:`.app`). The store keeps each session's apps under
the setting ``apps.<session id>``, with their socket paths, which the server's proxy reads.

An app belongs to the chat run that started it (:data:`RUN`, set by the kernel for each run):
when a person stops that run, the apps it started end with it (:meth:`Apps.stop_run`), as
does an app whose start is cancelled while it is awaited. Apps of earlier, finished turns
run on.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import shlex
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..jobs import Job, JobsConfig
from ..jobs.job import follow
from ..sandbox.tiers import Tier
from .app import NAME, App, AppError, answers, open_listener
from .config import AppsConfig

if TYPE_CHECKING:
    from ..sandbox import Sandbox
    from ..store import Store

log = logging.getLogger(__name__)
#: The schedule kind of an app's crash: the server posts it into the chat, once.
APP_CRASH = "app_crash"
_PROBE_EVERY = 0.05  # seconds between two probes of an app that closed without answering
#: Why an app ended with the run that started it (a person's Stop of that run).
STOPPED_WITH_RUN = "stopped with the run that started it (Stop)"
#: The chat run whose tools run in this context ("" outside one): set by the kernel as a run
#: begins, read when an app starts, so the run's Stop knows which apps are its own.
RUN: contextvars.ContextVar[str] = contextvars.ContextVar("think_app_run", default="")


def setting_key(session_id: str) -> str:
    """The store setting that holds a session's apps."""
    return f"apps.{session_id}"


def link_items(push: Callable[[dict[str, Any]], None]) -> Callable[[str, dict[str, Any]], None]:
    """An ``on_record`` that sends each record as an ``apps`` item over the kernel link."""

    def send(session_id: str, record: dict[str, Any]) -> None:
        push({"kind": "apps", "session_id": session_id, "record": record})

    return send


class Apps:
    """The live apps of one kernel (each belongs to the session that started it)."""

    def __init__(self, config: AppsConfig, sandbox: Callable[[], Awaitable[Sandbox]]) -> None:
        self.config = config
        self._sandbox = sandbox
        self._apps: dict[str, dict[str, App]] = {}  # session -> name -> app
        self._stores: dict[str, Store] = {}
        self._wakes: dict[str, Callable[[], Any] | None] = {}
        self._tasks: set[asyncio.Task] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        self._closed = False
        #: Apps a person's Stop ended, per session, until the model's next request is told.
        self._stopped_by_stop: dict[str, list[str]] = {}
        #: Called with (session id, record) after each change (a linked kernel sends it).
        self.on_record: Callable[[str, dict[str, Any]], None] | None = None
        #: Called with an app that crashed after it served (once per crash): the chat is told.
        self.on_crash: Callable[[App], Any] | None = None

    def attach(self, on_record: Callable[[str, dict[str, Any]], None]) -> None:
        """Send every later record to ``on_record``."""
        self.on_record = on_record

    # ------------------------------------------------------------------ queries

    def get(self, session_id: str, name: str) -> App | None:
        """The app ``name`` of the session."""
        return self._apps.get(session_id, {}).get(name)

    def of(self, session_id: str) -> list[App]:
        """The session's apps, oldest first."""
        return sorted(self._apps.get(session_id, {}).values(), key=lambda a: a.started_at)

    def alive(self, session_id: str | None = None) -> list[App]:
        """Apps still starting or serving (of one session, or all)."""
        sessions = [session_id] if session_id is not None else list(self._apps)
        return [a for s in sessions for a in self._apps.get(s, {}).values() if a.alive]

    # ------------------------------------------------------------------ start and stop

    async def start(
        self,
        session_id: str,
        command: str,
        name: str = "",
        *,
        restart_on_change: bool = False,
        port: int | None = None,
        store: Store | None = None,
        wake_scheduler: Callable[[], Any] | None = None,
        run_id: str | None = None,
    ) -> App:
        """Start ``command`` as an app of the session and wait until it answers HTTP (or
        ends, or its start timeout passes: then it is stopped). With ``port`` the app binds
        that port itself (tier 1 only) and a forwarder links it to its socket. It belongs to
        ``run_id`` (default: the chat run of this context, :data:`RUN`). Cancelled while it
        waits, the app is stopped before the cancellation goes on. AppError says why not."""
        if self._closed:
            raise AppError("the kernel is shutting down")
        if not command.strip():
            raise AppError("the command is empty")
        mine = self._apps.setdefault(session_id, {})
        name = name.strip() or self._free_name(mine)
        if not NAME.match(name):
            raise AppError("an app name is 1-40 letters, digits, '_', '.' or '-', "
                           "starting with a letter or digit")  # fmt: skip
        old = mine.get(name)
        if old is not None and old.alive:
            raise AppError(f"app {name!r} is running; stop_app or restart it, or pick "
                           "another name")  # fmt: skip
        if len(self.alive(session_id)) >= self.config.max_apps:
            raise AppError(f"{self.config.max_apps} apps are running already "
                           "(c.AppsConfig.max_apps); stop one first")  # fmt: skip
        if port is not None:
            await self._check_port(port)
        if store is not None:
            self._stores[session_id] = store
        if wake_scheduler is not None:
            self._wakes[session_id] = wake_scheduler
        path, sock = open_listener(self.config.socket_root)
        app = App(name, command, session_id, path, sock, restart_on_change, port)
        app.run_id = RUN.get() if run_id is None else run_id
        app.restarts = old.restarts + 1 if old is not None else 0
        mine[name] = app
        try:
            await self._launch(app)
        except BaseException:
            app.state, app.error = "crashed", "it could not be started"
            app.release()
            await self._save(session_id)
            raise
        try:
            await self._save(session_id)
            await self._wait_ready(app)
        except asyncio.CancelledError:
            # Whoever awaited it gave up (the chat's Stop): an app no one waits for must not
            # live on unseen. The stop is a task of ours, so a second cancel cannot cut it.
            with contextlib.suppress(Exception):
                await asyncio.shield(self._spawn(self.stop(session_id, name, STOPPED_WITH_RUN)))
            raise
        return app

    async def _launch(self, app: App) -> None:
        sandbox = await self._sandbox()
        cfg = JobsConfig(timeout=0.0, memory_mb=self.config.memory_mb,
                         log_bytes=self.config.log_bytes, check_interval=1.0)  # fmt: skip
        job = Job(app.name, app.command, app.session_id, False, cfg)
        # As a job's: no CPU-time or address-space limit of a foreground run; its memory is
        # watched over its processes together.
        limits = {**sandbox.config.limits(), "cpu_seconds": 0, "memory_bytes": 0}
        command = app.command if app.port is None else forwarded(app.command, app.port)
        job.run = await sandbox.start_job(command, limits, f"app:{app.name}", app.sock,
                                          net=app.port is not None)  # fmt: skip
        job.sandbox = sandbox
        app.job = job
        app.task = self._spawn(self._follow(app, job, sandbox))
        if app.restart_on_change:
            self._spawn(self._watch_files(app, job, sandbox.workspace))

    async def _check_port(self, port: int) -> None:
        """Refuse a port the app cannot bind, or a tier without a network of its own."""
        if not 1024 <= port <= 65535:
            raise AppError("port must be between 1024 and 65535 (the app binds it itself, "
                           "as the session's user)")  # fmt: skip
        sandbox = await self._sandbox()
        if sandbox.tier != Tier.BUBBLEWRAP:
            raise AppError(
                f"an app cannot bind a port on sandbox tier {int(sandbox.tier)}: only tier 1 "
                "gives the session a network of its own. Serve on the listening socket "
                "handed as file descriptor $THINK_APP_FD instead (no port argument): "
                "`python -m think_app DIR`, `uvicorn mod:app --fd $THINK_APP_FD`, "
                "`gunicorn --bind fd://$THINK_APP_FD app:app`, or "
                "`import think_app; think_app.serve(MyHandler)`"
            )

    async def _wait_ready(self, app: App) -> None:
        """Until the app answers HTTP; past the start timeout it is stopped."""
        job = app.job
        assert job is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.start_timeout
        ended = asyncio.ensure_future(job.ended.wait())
        probe: asyncio.Future[bool] | None = None
        try:
            while not job.ended.is_set() and loop.time() < deadline:
                probe = asyncio.ensure_future(answers(app.path))
                done, _ = await asyncio.wait({probe, ended}, timeout=deadline - loop.time(),
                                             return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
                if probe in done and probe.result():
                    if app.state == "starting":
                        app.state = "running"
                        await self._save(app.session_id)
                    return
                probe.cancel()
                if not done:
                    break
                if probe in done:  # it closed without answering: it may not serve yet
                    await asyncio.sleep(_PROBE_EVERY)  # a poll interval, not a wait
        finally:
            ended.cancel()
            if probe is not None:
                probe.cancel()  # cancelled while it waited: the probe is ours to end
        if job.ended.is_set() and app.task is not None:
            await asyncio.wait({app.task})  # its end recorded (exited or crashed)
        if app.alive:
            why = f"it did not answer HTTP within {self.config.start_timeout:g} s"
            await self.stop(app.session_id, app.name, why)
            app.error = why + " (c.AppsConfig.start_timeout); it was stopped"

    async def stop(self, session_id: str, name: str, reason: str = "stopped") -> App:
        """Stop an app (its whole process group is killed) and wait until it has ended."""
        app = self.get(session_id, name)
        if app is None:
            raise AppError(f"no app {name!r} in this session")
        if app.alive:
            app.stopping = True
            app.error = reason
            job = app.job
            if job is not None and job.run is not None and job.state == "running":
                job.stop_reason = reason
                await job.sandbox.kill_run(job.run, "stopped")
                job.run.queue.put_nowait(("wake", "", b""))  # its loop counts the kill's grace
                await job.ended.wait()
            if app.task is not None:
                await asyncio.wait({app.task})
            self._ended(app)
        return app

    async def restart(self, session_id: str, name: str) -> App:
        """Stop the app if it runs, and start its command again under the same name."""
        app = self.get(session_id, name)
        if app is None:
            raise AppError(f"no app {name!r} in this session")
        await self.stop(session_id, name, "restarted")
        # Restarted, it is still the app its run started (that run's Stop ends it).
        return await self.start(session_id, app.command, name,
                                restart_on_change=app.restart_on_change, port=app.port,
                                store=self._stores.get(session_id),
                                run_id=app.run_id)  # fmt: skip

    async def stop_all(self, session_id: str | None, reason: str = "stopped") -> list[App]:
        """Stop every app still alive (of one session, or all); the apps it stopped."""
        apps = self.alive(session_id)
        await asyncio.gather(*(self.stop(a.session_id, a.name, reason) for a in apps))
        return apps

    async def stop_run(self, run_id: str, reason: str = STOPPED_WITH_RUN) -> list[App]:
        """The chat run ``run_id`` was stopped: stop the apps it started that still run (an
        app of an earlier turn runs on); the apps it stopped."""
        if not run_id:
            return []
        apps = [a for a in self.alive() if a.run_id == run_id]
        await asyncio.gather(*(self.stop(a.session_id, a.name, reason) for a in apps))
        for a in apps:
            self._stopped_by_stop.setdefault(a.session_id, []).append(a.name)
        return apps

    def take_stopped_news(self, session_id: str) -> str:
        """A note for the model's next request naming the apps a person's Stop ended since
        (its serve_app result still says they run); "" when none. Each is told once."""
        names = self._stopped_by_stop.pop(session_id, [])
        if not names:
            return ""
        listed = ", ".join(repr(n) for n in dict.fromkeys(names))
        return (f"Note: the person's Stop of your last request also stopped the live app(s) "
                f"{listed} that request started; call serve_app again if it is still "
                "wanted.")  # fmt: skip

    async def close(self) -> None:
        """The kernel ends: every app is stopped (and its end recorded)."""
        self._closed = True
        with contextlib.suppress(Exception):
            await self.stop_all(None, "its session's kernel ended")
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)

    # ------------------------------------------------------------------ following an app

    def _spawn(self, coro: Any) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _follow(self, app: App, job: Job, sandbox: Sandbox) -> None:
        try:
            await follow(job, sandbox, lambda: None)
        finally:
            job.end("crashed", "its sandbox went away while it ran")  # no-op once ended
            if app.job is job and app.alive and not app.stopping:
                served = app.state == "running"  # a failed start is the tool's to report
                self._ended(app)
                await self._save(app.session_id)
                if served and app.state == "crashed":
                    await self._announce(app)

    async def _announce(self, app: App) -> None:
        """An ``app_crash`` schedule row: the server posts the crash into the chat, once."""
        if self.on_crash is not None:
            with contextlib.suppress(Exception):
                self.on_crash(app)
        store = self._stores.get(app.session_id)
        if store is None:
            return
        row = {k: v for k, v in app.describe(tail=20).items() if k != "socket"}
        with contextlib.suppress(Exception):  # a closed store must not end the registry
            await store.add_schedule(APP_CRASH, time.time(), row, app.session_id)
            wake = self._wakes.get(app.session_id)
            if wake is not None:
                result = wake()
                if asyncio.iscoroutine(result):
                    await result

    def _ended(self, app: App) -> None:
        """Record how its process ended, and give its socket back."""
        job = app.job
        if app.stopping:
            app.state = "stopped"
        elif job is not None and job.state == "done":
            app.state, app.exit_code = "exited", 0
        else:
            app.state = "crashed"
            app.exit_code = job.exit_code if job is not None else None
            app.error = (job.error if job is not None else "") or "it ended"
        app.release()
        self._spawn(self._save(app.session_id))

    async def _watch_files(self, app: App, job: Job, workspace: Path) -> None:
        """Restart the app when a file its command names (or, naming none, a file at the
        top of the workspace) changes."""
        last = await asyncio.to_thread(_mtimes, app.command, workspace)
        while app.job is job and app.alive:
            await asyncio.sleep(self.config.restart_poll)  # a poll of the file system
            now = await asyncio.to_thread(_mtimes, app.command, workspace)
            if now != last and app.job is job and app.alive and not app.stopping:
                log.info("app %s: its files changed, restarting it", app.name)
                with contextlib.suppress(AppError):
                    await self.restart(app.session_id, app.name)
                return

    def _free_name(self, mine: dict[str, App]) -> str:
        if "app" not in mine:
            return "app"
        n = 2
        while f"app-{n}" in mine:
            n += 1
        return f"app-{n}"

    # ------------------------------------------------------------------ the store

    def record(self, session_id: str) -> dict[str, Any]:
        """What the store keeps of the session's apps."""
        apps = [a.describe() for a in self.of(session_id)]
        return {"pid": os.getpid(), "updated_at": time.time(), "apps": apps}

    async def _save(self, session_id: str) -> None:
        async with self._locks.setdefault(session_id, asyncio.Lock()):
            record = self.record(session_id)
            store = self._stores.get(session_id)
            if store is not None:
                with contextlib.suppress(Exception):  # a closed store must not end the app
                    await store.set_setting(setting_key(session_id), record)
            if self.on_record is not None:
                try:
                    self.on_record(session_id, record)
                except Exception:  # the link's trouble, not the app's
                    log.debug("could not send the apps record", exc_info=True)


def forwarded(command: str, port: int) -> str:
    """``command`` with ``$PORT`` set and the forwarder from its socket to that port beside
    it (in its process group: stopping the app stops both)."""
    python = shlex.quote(sys.executable)
    return f"export PORT={port}\n{python} -m think_app_port {port} &\n{command}"


def _mtimes(command: str, workspace: Path) -> dict[str, float]:
    """Modification times of the files an app's command names under ``workspace`` (the
    files of a folder it names; the workspace's top files when it names none)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    root = workspace.resolve()
    named: list[Path] = []
    for word in words:
        p = (root / word).resolve()
        if p.is_relative_to(root) and p != root and p.exists():
            named.append(p)
    folders = [p for p in named if p.is_dir()] or ([] if named else [root])
    files = [p for p in named if p.is_file()]
    for folder in folders:
        with contextlib.suppress(OSError):
            files += [f for f in folder.iterdir() if f.is_file() and not f.name.startswith(".")]
    out: dict[str, float] = {}
    for f in files:
        with contextlib.suppress(OSError):
            out[str(f)] = f.stat().st_mtime
    return out
