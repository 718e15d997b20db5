"""A kernel's background jobs, by session: started, listed, stopped, recorded in the store,
and announced when they end.

    jobs = Jobs(JobsConfig(), start_sandbox)
    await jobs.recover(store, session_id)           # what a dead kernel left running: lost
    job = await jobs.start(session_id, "python train.py", "train", wake=True,
                           store=store, wake_scheduler=scheduler_wake)
    jobs.get(session_id, "train").describe(tail=20)
    await jobs.stop(session_id, "train")            # or stop_all(session_id)
    await jobs.close()                              # the kernel ends: every job ends, as lost

The store keeps each session's jobs under the setting ``jobs.<session id>`` (their status and
last lines, refreshed while they run), which ``GET /api/think/sessions/{id}/jobs`` reads. A
job's end is a ``job_end`` schedule row: the server's scheduler fires it (a notification in
every tab, and with ``wake`` a message in the chat that starts a run).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .config import JobsConfig
from .job import Job, follow

if TYPE_CHECKING:
    from ..sandbox import Sandbox
    from ..store import Store

log = logging.getLogger(__name__)

#: The schedule kind of a job's end.
JOB_END = "job_end"
#: Lines of a job's log kept with its record in the store (and in its end message).
RECORD_TAIL = 20
_SAVE_EVERY = 2.0  # seconds between two saves of a running job's progress
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,39}$")


class JobError(ValueError):
    """A job that cannot be started, found or stopped; the message says why."""


def setting_key(session_id: str) -> str:
    """The store setting that holds a session's jobs."""
    return f"jobs.{session_id}"


def link_items(push: Callable[[dict[str, Any]], None]) -> Callable[[str, dict[str, Any]], None]:
    """An ``on_record`` that sends each record as a ``jobs`` item over the kernel link."""

    def send(session_id: str, record: dict[str, Any]) -> None:
        push({"kind": "jobs", "session_id": session_id, "record": record})

    return send


class Jobs:
    """The background jobs of one kernel (each belongs to the session that started it)."""

    def __init__(self, config: JobsConfig, sandbox: Callable[[], Awaitable[Sandbox]]) -> None:
        self.config = config
        self._sandbox = sandbox
        self.token = uuid.uuid4().hex[:12]  # this kernel's jobs, against a dead kernel's
        self._jobs: dict[str, dict[str, Job]] = {}  # session -> name -> job
        self._past: dict[str, list[dict[str, Any]]] = {}  # ended jobs read from the store
        self._stores: dict[str, Store] = {}
        self._wakes: dict[str, Callable[[], Any] | None] = {}
        self._tasks: set[asyncio.Task] = set()
        self._saving: dict[str, asyncio.Task] = {}
        self._saved_at: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._closed = False
        #: Called with (session id, record) after each save: a linked kernel sends it to
        #: the server (the sidebar's progress; a session with running jobs stays awake).
        self.on_record: Callable[[str, dict[str, Any]], None] | None = None

    def attach(self, on_record: Callable[[str, dict[str, Any]], None], session_id: str) -> None:
        """Send every later record to ``on_record``, and the session's record now."""
        self.on_record = on_record
        if session_id in self._stores or session_id in self._jobs:
            on_record(session_id, self.record(session_id))

    # ------------------------------------------------------------------ queries

    def get(self, session_id: str, name: str) -> Job | None:
        """The job ``name`` of the session (running or ended in this kernel)."""
        return self._jobs.get(session_id, {}).get(name)

    def of(self, session_id: str) -> list[Job]:
        """The session's jobs of this kernel, oldest first."""
        return sorted(self._jobs.get(session_id, {}).values(), key=lambda j: j.started_at)

    def running(self, session_id: str | None = None) -> list[Job]:
        """Jobs still running (of one session, or all)."""
        sessions = [session_id] if session_id is not None else list(self._jobs)
        return [j for s in sessions for j in self._jobs.get(s, {}).values() if j.state == "running"]

    def past(self, session_id: str) -> list[dict[str, Any]]:
        """Ended jobs of earlier kernels of the session, as recorded (lost ones included)."""
        return list(self._past.get(session_id, []))

    # ------------------------------------------------------------------ start and stop

    async def start(
        self,
        session_id: str,
        command: str,
        name: str = "",
        *,
        wake: bool = False,
        store: Store | None = None,
        wake_scheduler: Callable[[], Any] | None = None,
    ) -> Job:
        """Start ``command`` as a background job of the session; JobError says why not."""
        if self._closed:
            raise JobError("the kernel is shutting down")
        if not command.strip():
            raise JobError("the command is empty")
        mine = self._jobs.setdefault(session_id, {})
        name = name.strip() or self._free_name(mine)
        if not _NAME.match(name):
            raise JobError("a job name is 1-40 letters, digits, '_', '.' or '-', "
                           "starting with a letter or digit")  # fmt: skip
        old = mine.get(name)
        if old is not None and old.state == "running":
            raise JobError(f"job {name!r} is running; stop it or pick another name")
        if len(self.running(session_id)) >= self.config.max_running:
            raise JobError(
                f"{self.config.max_running} jobs are running already "
                "(c.JobsConfig.max_running); stop one or wait for one to end"
            )
        sandbox = await self._sandbox()
        job = Job(name, command, session_id, wake, self.config)
        limits = {
            **sandbox.config.limits(),
            "cpu_seconds": self.config.cpu_seconds,
            # Memory is watched over the job's processes together, not per address space:
            # numpy and friends reserve far more address space than they touch.
            "memory_bytes": 0,
        }
        job.run = await sandbox.start_job(command, limits, worker=f"job:{name}")
        job.sandbox = sandbox
        mine[name] = job
        if store is not None:
            self._stores[session_id] = store
        self._wakes[session_id] = wake_scheduler
        task = asyncio.get_running_loop().create_task(self._follow(job, sandbox))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        await self._save(session_id)
        return job

    async def stop(self, session_id: str, name: str, reason: str = "stopped") -> Job:
        """Kill a running job and wait until it has ended."""
        job = self.get(session_id, name)
        if job is None:
            raise JobError(f"no job {name!r} in this session")
        if job.state == "running" and job.run is not None:
            job.stop_reason = job.stop_reason or reason
            await job.sandbox.kill_run(job.run, "stopped")
            job.run.queue.put_nowait(("wake", "", b""))  # its loop counts the kill's grace
            await job.ended.wait()
        return job

    async def stop_all(self, session_id: str | None, reason: str = "stopped") -> list[Job]:
        """Stop every running job (of one session, or all); the jobs it stopped."""
        jobs = self.running(session_id)
        await asyncio.gather(*(self.stop(j.session_id, j.name, reason) for j in jobs))
        return jobs

    async def close(self) -> None:
        """The kernel ends: every running job is killed and recorded as lost."""
        self._closed = True
        for job in self.running():
            job.stop_state = "lost"
            job.stop_reason = ("its kernel shut down or restarted while it ran; the job "
                               "ended with the session's sandbox")  # fmt: skip
        with contextlib.suppress(Exception):
            await self.stop_all(None)
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=10)
        for task in list(self._saving.values()):
            with contextlib.suppress(Exception):
                await task

    # ------------------------------------------------------------------ following a job

    async def _follow(self, job: Job, sandbox: Sandbox) -> None:
        sid = job.session_id
        try:
            await follow(job, sandbox, lambda: self._progress(sid))
        finally:
            job.end("lost", "its sandbox went away while it ran")  # no-op once ended
            try:  # review mode: what the job wrote in the view goes to the proposal now
                await sandbox.collect_review()
            except Exception:  # its end is recorded whatever the proposal says
                log.exception("could not take job %s's files into the proposal", job.name)
            self._trim(sid)
            await self._save(sid)
            await self._announce(job.session_id, job.describe(tail=RECORD_TAIL))

    def _progress(self, session_id: str) -> None:
        """Output came: save the session's jobs, at most every few seconds."""
        if session_id in self._saving or self._closed:
            return
        wait = max(0.0, self._saved_at.get(session_id, 0.0) + _SAVE_EVERY - time.time())

        async def later() -> None:
            try:
                await asyncio.sleep(wait)  # a throttle, not a wait for a condition
                await self._save(session_id)
            finally:
                self._saving.pop(session_id, None)

        self._saving[session_id] = asyncio.get_running_loop().create_task(later())

    def _trim(self, session_id: str) -> None:
        mine = self._jobs.get(session_id, {})
        ended = sorted((j for j in mine.values() if j.state != "running"),
                       key=lambda j: j.started_at)  # fmt: skip
        for job in ended[: max(0, len(ended) - self.config.max_kept)]:
            del mine[job.name]

    def _free_name(self, mine: dict[str, Job]) -> str:
        n = len(mine) + 1
        while f"job-{n}" in mine:
            n += 1
        return f"job-{n}"

    # ------------------------------------------------------------------ the store

    def record(self, session_id: str) -> dict[str, Any]:
        """What the store keeps of the session's jobs (this kernel's, then earlier ones')."""
        names = set(self._jobs.get(session_id, {}))
        past = [p for p in self._past.get(session_id, []) if p.get("name") not in names]
        jobs = [*past[-self.config.max_kept :],
                *(j.describe(tail=RECORD_TAIL) for j in self.of(session_id))]  # fmt: skip
        return {"kernel": self.token, "pid": os.getpid(), "updated_at": time.time(), "jobs": jobs}

    async def _save(self, session_id: str) -> None:
        store = self._stores.get(session_id)
        if store is None:
            return
        async with self._locks.setdefault(session_id, asyncio.Lock()):
            self._saved_at[session_id] = time.time()
            record = self.record(session_id)
            with contextlib.suppress(Exception):  # a closed store must not end the job's task
                await store.set_setting(setting_key(session_id), record)
            if self.on_record is not None:
                try:
                    self.on_record(session_id, record)
                except Exception:  # the link's trouble, not the job's
                    log.debug("could not send the jobs record", exc_info=True)

    async def recover(
        self, store: Store, session_id: str, wake_scheduler: Callable[[], Any] | None = None
    ) -> list[dict[str, Any]]:
        """Read the session's recorded jobs; those an earlier kernel left running are lost
        (their sandbox died with it): recorded so and announced. Returns them."""
        self._stores[session_id] = store
        self._wakes.setdefault(session_id, wake_scheduler)
        saved = await store.get_setting(setting_key(session_id))
        rows = saved.get("jobs") if isinstance(saved, dict) else None
        if not isinstance(rows, list):
            return []
        lost = []
        past: list[dict[str, Any]] = []
        for row in rows:
            if not isinstance(row, dict):
                continue
            if row.get("state") == "running" and saved.get("kernel") != self.token:
                why = "its kernel stopped (a restart or a crash) while it ran"
                row = {**row, "state": "lost", "ended_at": time.time(), "error": why}
                lost.append(row)
            past.append(row)
        self._past[session_id] = past
        if lost:
            await self._save(session_id)
            for row in lost:
                await self._announce(session_id, row)
        return lost

    async def _announce(self, session_id: str, described: dict[str, Any]) -> None:
        """A ``job_end`` schedule row for the server: a notification, and a run if asked."""
        store = self._stores.get(session_id)
        if store is None:
            return
        with contextlib.suppress(Exception):
            await store.add_schedule(JOB_END, time.time(), described, session_id)
            wake = self._wakes.get(session_id)
            if wake is not None:
                result = wake()
                if asyncio.iscoroutine(result):
                    await result
