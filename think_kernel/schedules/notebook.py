"""Reminders in a think kernel: wake the server's scheduler, or fire them here without one,
and show fired reminders in the notebook's next cell output.

    reminders = KernelReminders(runtime, link)   # link: the server link, or None
    await reminders.start()                      # standalone: fire due ones (late ones too)
    markdown = await reminders.take_note()       # fired since the last cell, or ""
    await reminders.close()

With a server, the server's scheduler fires every reminder (the kernel only stores the row in
the shared store and asks the server over the link to look now). Without one (nbclient,
``jupyter console``), the kernel runs a scheduler of its own over its local store for its
session's reminders while it is alive: a firing passes the same gate as on the server
(``gate.py``: spacing, and a cap on runs with nobody there; one held back leaves a note in
the session), then posts the reminder message (once per firing:
its id comes from the idempotency key) and runs it in the background, after any run in
progress; reminders that fell due while no kernel ran fire when it starts, marked late.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from typing import TYPE_CHECKING, Any

from ..jobs.registry import JOB_END
from ..jobs.wake import fire_here
from ..waits import wait_for
from . import reminders
from .config import ScheduleConfig
from .gate import hold_back, post_note
from .scheduler import Firing, Scheduler
from .when import format_local

if TYPE_CHECKING:
    from ..runtime import Runtime

log = logging.getLogger(__name__)
WAKE_TIMEOUT = 5.0
PREVIEW = 600


class KernelReminders:
    """The kernel's side of reminders (one per runtime)."""

    def __init__(self, runtime: Runtime, link: Any = None, poll: float = 5.0) -> None:
        self.runtime = runtime
        self.link = link
        self.poll = poll
        self.scheduler: Scheduler | None = None
        self._task: asyncio.Task[None] | None = None
        self._wakes: set[asyncio.Task[Any]] = set()
        reminders = runtime.services.reminders
        assert reminders is not None  # every runtime has them
        reminders.wake = self.wake

    async def start(self) -> None:
        """Without a server: start this kernel's scheduler for its session's reminders."""
        if self.link is not None or self._task is not None:
            return
        store = self.runtime.store
        assert store is not None, "start the runtime first"
        runtime = self.runtime
        self.scheduler = Scheduler(
            store, poll=self.poll, owner="kernel", session_id=lambda: runtime.session_id
        )
        self.scheduler.register(reminders.KIND, self.fire)
        # A background job's end that asked to wake the agent: run here too.
        self.scheduler.register(JOB_END, functools.partial(fire_here, runtime))
        self._task = asyncio.ensure_future(self.scheduler.run())

    def wake(self) -> None:
        """A reminder was stored: have whoever fires it look now."""
        if self.scheduler is not None:
            self.scheduler.wake()
        elif self.link is not None:
            task = asyncio.ensure_future(self._wake_server())
            self._wakes.add(task)
            task.add_done_callback(self._wakes.discard)

    async def _wake_server(self) -> None:
        # Best effort: the server's scheduler also finds the row at its next poll.
        with contextlib.suppress(Exception):
            await wait_for(self.link.request("schedules.wake", {}), WAKE_TIMEOUT)

    async def fire(self, payload: dict[str, Any], firing: Firing) -> dict[str, Any]:
        """Post the reminder into the session (once per firing) and run it here."""
        runtime = self.runtime
        store = runtime.store
        assert store is not None
        sid = firing.session_id or runtime.session_id
        mid = reminders.message_id(firing.key)
        message = await store.get_message(mid)
        if message is None:
            services = runtime.services.reminders
            config = services.config if services is not None else ScheduleConfig()
            held = await hold_back(store, config, firing, payload)
            if held is not None:
                await post_note(store, sid, held)
                raise held.signal()
            fired_at = time.time()
            text = reminders.message_text(payload, firing, fired_at)
            att = reminders.attachment(payload, firing, fired_at)
            message = await store.add_message(sid, "user", text, id=mid, attachments=[att])
        elif await _answered(runtime, mid):
            return {"message_id": mid}  # an earlier attempt ran it to the end
        async with runtime.run_lock:
            async for _event in runtime.run(message["content"], user_message_id=mid):
                pass
        return {"message_id": mid}

    async def take_note(self) -> str:
        """Markdown for the reminders of this session that fired since the last look (each
        is shown once, in whichever notebook output comes next), or ""."""
        store = self.runtime.store
        if store is None:
            return ""
        try:
            fired = await store.take_unshown_firings(self.runtime.session_id, reminders.KIND)
        except Exception:  # an old store: nothing to show
            log.debug("no reminders to show", exc_info=True)
            return ""
        blocks = []
        for row in fired:
            raw = row.get("outcome")
            outcome: dict[str, Any] = raw if isinstance(raw, dict) else {}
            schedule = await store.get_schedule(row["schedule_id"]) or {}
            got = schedule.get("payload")
            payload: dict[str, Any] = got if isinstance(got, dict) else {}
            tz = str(schedule.get("tz") or payload.get("tz") or "UTC")
            due = format_local(float(row["occurrence_at"]), tz)
            late = " — **late** (Jupyter was not running when it fell due)" if row["late"] else ""
            lines = [f"⏰ **Reminder** (set for {due}){late}: {payload.get('message', '')}"]
            answer = await _answer(self.runtime, str(outcome.get("message_id") or ""))
            if answer:
                quoted = answer[:PREVIEW] + ("…" if len(answer) > PREVIEW else "")
                lines.append("> " + quoted.replace("\n", "\n> "))
            elif outcome.get("run_id"):
                lines.append("*Its run is answering in the Think sidebar.*")
            blocks.append("\n\n".join(lines))
        return "\n\n---\n\n".join(blocks)

    async def close(self) -> None:
        """Stop the scheduler (its claims go back to pending) and pending wakes."""
        for task in list(self._wakes):
            task.cancel()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self.scheduler is not None:
            await self.scheduler.close()


async def _answer(runtime: Runtime, message_id: str) -> str:
    store = runtime.store
    if not message_id or store is None:
        return ""
    return await store.reply_text(message_id)


async def _answered(runtime: Runtime, message_id: str) -> bool:
    return bool(await _answer(runtime, message_id))
