"""Background jobs on the server: their end in every tab and, when the agent asked, in its
chat; and ``GET /api/think/sessions/{id}/jobs``.

    scheduler.register(JOB_END, JobEndFiring(services).fire)
    watch = JobsWatch(hub); links.item_listeners.append(watch.on_item)
    watch.busy("s_1")       # it has running jobs: keep its kernel

While jobs run, their kernel sends each change of its record as a ``jobs`` link item:
:class:`JobsWatch` passes it to the session's tabs (a ``jobs`` frame, not stored) and keeps a
chat with running jobs from hibernating (which would end them with its kernel).

A kernel records a job's end as a ``job_end`` schedule row (``think_kernel/jobs/``). Its
firing publishes a ``job`` frame to every tab on ``/api/think/notifications`` and, for a job
started with ``wake``, posts a message into the job's session that starts a run (through
``ChatSessions.send``, with a message id derived from the firing's key, so an attempt that
runs again after a crash finds its message instead of posting another).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from think_kernel.jobs import JOB_END, setting_key
from think_kernel.jobs.wake import attachment, end_text, message_id
from think_kernel.schedules.scheduler import Firing, pid_alive
from think_kernel.wire.link import JobsStopFrame

from .base import ThinkHandler
from .services import Services

if TYPE_CHECKING:
    from .hub import Hub
    from .link import KernelInfo

#: How long a chat whose job just ended stays awake for the end's message, at most (s).
ENDING_GRACE = 120.0

__all__ = [
    "JOB_END",
    "JobEndFiring",
    "JobsHandler",
    "JobsStopHandler",
    "JobsWatch",
    "end_text",
    "message_id",
]


class JobsWatch:
    """What each session's kernel last said of its jobs."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self._running: dict[str, str] = {}  # session -> the kernel epoch with running jobs
        self._kernels: dict[str, str] = {}  # session -> the kernel that last told of its jobs
        # session -> when its last running job ended, until the end's firing has posted
        self._ending: dict[str, float] = {}

    def on_item(self, info: KernelInfo, item: dict[str, Any]) -> None:
        """A ``jobs`` item: remember whether jobs run, and send the jobs to the tabs."""
        if item.get("kind") != "jobs":
            return
        sid = str(item.get("session_id") or "")
        record = item.get("record")
        rows = record.get("jobs") if isinstance(record, dict) else None
        if not sid or not isinstance(rows, list):
            return
        jobs = [j for j in rows if isinstance(j, dict)]
        self._kernels[sid] = info.kernel_id
        if any(j.get("state") == "running" for j in jobs):
            self._running[sid] = info.epoch
        elif self._running.pop(sid, None) is not None:
            # Its end's message (and the run it starts) comes through the scheduler: a
            # kernel culled meanwhile would race that run.
            self._ending[sid] = time.monotonic()
        self.hub.publish(sid, {"type": "jobs", "jobs": jobs})

    def kernel_of(self, session_id: str) -> str | None:
        """The kernel that last told of the session's jobs (a chat's or a notebook's)."""
        return self._kernels.get(session_id)

    def announced(self, session_id: str) -> None:
        """The end of the session's jobs was told (its message posted): it may idle now."""
        self._ending.pop(session_id, None)

    def busy(self, session_id: str) -> bool:
        """Whether the session's kernel must not be culled: its jobs run, or one just ended
        and its end is not yet told (for at most ``ENDING_GRACE`` seconds)."""
        ended = self._ending.get(session_id)
        if ended is not None and time.monotonic() - ended > ENDING_GRACE:
            del self._ending[session_id]
            ended = None
        return session_id in self._running or ended is not None


class JobEndFiring:
    """The ``job_end`` handler of the server's scheduler."""

    def __init__(self, services: Services) -> None:
        self.svc = services

    async def fire(self, payload: dict[str, Any], firing: Firing) -> dict[str, Any]:
        """Tell every tab; post the end into its session when the agent asked to be woken."""
        svc = self.svc
        sid = firing.session_id or ""
        session = await svc.store.get_session(sid)
        if session is None:
            return {"skipped": "the session no longer exists"}
        outcome: dict[str, Any] = {}
        if payload.get("wake"):
            message, run = await svc.chats.send(
                sid,
                end_text(payload),
                attachments=[attachment(payload, firing.key)],
                message_id=message_id(firing.key),
            )
            outcome = {"message_id": message["id"], "run_id": run["id"]}
        svc.jobs.announced(sid)
        svc.notifier.publish(
            {
                "type": "job",
                "key": firing.key,
                "session_id": sid,
                "session_title": session.get("title") or "",
                "session_kind": session.get("kind") or "chat",
                "name": payload.get("name", ""),
                "state": payload.get("state", ""),
                "message": end_text({**payload, "tail": ""}).split("\n", 1)[0],
                "fired_at": time.time(),
                **outcome,
            }
        )
        return outcome


class JobsHandler(ThinkHandler):
    """``GET``: a session's background jobs (running ones with their progress)."""

    @authorized
    async def get(self, session_id: str) -> None:
        """The jobs its kernels recorded, oldest first; a job whose kernel is gone is lost."""
        await self.session_or_404(session_id)
        saved = await self.svc.store.get_setting(setting_key(session_id))
        jobs = saved.get("jobs") if isinstance(saved, dict) else None
        rows = [j for j in jobs if isinstance(j, dict)] if isinstance(jobs, list) else []
        pid = saved.get("pid") if isinstance(saved, dict) else None
        # The kernel that recorded them died (its next start records them lost): say so now.
        gone = isinstance(pid, int) and pid != os.getpid() and not pid_alive(pid)
        if gone:
            why = "its kernel stopped while it ran"
            rows = [{**j, "state": "lost", "error": why} if j.get("state") == "running" else j
                    for j in rows]  # fmt: skip
        self.send({"jobs": rows})


class JobsStopHandler(ThinkHandler):
    """``POST {"name"?}``: stop one of the session's jobs, or all (a person's Stop)."""

    @authorized
    async def post(self, session_id: str) -> None:
        """Ask the session's kernel to stop them (202); 409 when no kernel runs it."""
        await self.session_or_404(session_id)
        name = self.body().get("name") or ""
        if not isinstance(name, str) or len(name) > 64:
            raise web.HTTPError(400, "name is a job's name (or absent: every job)")
        kernel = self.svc.jobs.kernel_of(session_id) or self.svc.chats.pool.kernels.get(session_id)
        if kernel is None or not await self.svc.chats.kernel_alive(kernel):
            raise web.HTTPError(409, "no kernel runs this session now, so none of its jobs runs")
        # The jobs' next record (the jobs frame, GET .../jobs) tells how they ended.
        self.svc.links.send(kernel, JobsStopFrame(session_id=session_id, name=name))
        self.send({"sent": True, "name": name}, status=202)
