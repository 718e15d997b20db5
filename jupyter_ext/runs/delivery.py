"""An attempt of a chat run on its way to the session's kernel: start or wake the kernel, say
when its Python worker restarted, and send the ``chat`` frame once the kernel's link is up.

    delivery = Delivery(store, pool, links, pipeline, owners, start_timeout=60.0,
                        current=is_current, interrupt=chats.interrupt)
    await delivery.deliver(run)        # a task the run queue owns
    delivery.send(kernel_id, run)      # again after a reconnect: the kernel drops a resend

A kernel that cannot start, or whose link does not come up within ``start_timeout``, ends the
attempt through ``interrupt`` (retried with backoff, or failed when the kernel cannot exist).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from think_kernel.waits import wait_for
from think_kernel.wire.link import ChatFrame

from .chatkernels import ChatKernels
from .owners import Owners
from .run import ChatRun

if TYPE_CHECKING:
    from think_kernel.store import Store

    from ..link import KernelLinks
    from ..pipeline import EventPipeline

log = logging.getLogger(__name__)

#: Told to the model (in the request's context) and shown in the chat after a hibernated or
#: lost kernel came back: what the warm Python worker held is not restored.
WORKER_RESTARTED = (
    "Note: this chat's kernel was restarted since the last message (it hibernated while "
    "idle, or stopped). The Python worker restarted: variables, imports and objects from "
    "earlier code runs are gone; files in the workspace are kept."
)

#: ``interrupt(run_id, reason, transient)``: the attempt lost its way to a kernel.
Interrupt = Callable[[str, str, bool], Awaitable[None]]


class Delivery:
    """Brings attempts to kernels; the run queue says which attempt is still wanted."""

    def __init__(
        self,
        store: Store,
        pool: ChatKernels,
        links: KernelLinks,
        pipeline: EventPipeline,
        owners: Owners,
        *,
        start_timeout: float,
        current: Callable[[ChatRun], bool],
        interrupt: Interrupt,
    ) -> None:
        self.store = store
        self.pool = pool
        self.links = links
        self.pipeline = pipeline
        self.owners = owners
        self.start_timeout = start_timeout
        #: Whether the queue still drives this attempt, running and not yet started by a
        #: kernel (a cancel or a newer attempt may have come while the kernel started).
        self.current = current
        self.interrupt = interrupt

    async def deliver(self, run: ChatRun) -> None:
        """Start (or wake) the session's kernel and send it the attempt once it is linked."""
        # While this runs, a link that comes up leaves the attempt to it: the frame goes out
        # once, after the restart note is known (see Sessions._on_connect).
        run.delivering += 1
        try:
            woke = self.pool.hibernating(run.session_id)
            kid = await self.pool.ensure(run.session_id)
            run.kernel_id = kid
            await self.store.update_run(run.id, kernel_id=kid, status="running")
            await wait_for(self.links.wait(kid), self.start_timeout)
            # Asked once the link is up: a kernel jupyter_server restarted under the same id
            # is known as a new process only when it links again.
            if self.pool.take_restart(run.session_id) or (woke and await self._ran(run)):
                run.context = f"{WORKER_RESTARTED}\n{run.context}".strip()
                await self._note_restart(run.session_id)
            if self.current(run):
                self.send(kid, run)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            await self.interrupt(run.id, "the think kernel did not connect in time", True)
        except Exception as e:
            permanent = type(e).__name__ in ("NoSuchKernel", "FileNotFoundError")
            log.warning("could not start a kernel for %s: %s", run.session_id, e)
            await self.interrupt(run.id, f"could not start a think kernel: {e}", not permanent)
        finally:
            run.delivering -= 1

    def send(self, kernel_id: str, run: ChatRun) -> None:
        """Send the attempt's ``chat`` frame; pongs to later pings must then list it."""
        if self.links.send(kernel_id, chat_frame(run)):
            run.delivered = True
            run.ping_floor = self.owners.next_ping  # pings sent from now on follow the frame

    async def _ran(self, run: ChatRun) -> bool:
        """Whether the session answered before this run (a server restart forgets which
        sessions hibernated: any earlier answer means a kernel served it before)."""
        earlier = await self.store.get_messages(run.session_id, limit=2)
        return any(m["id"] != run.message_id for m in earlier)

    async def _note_restart(self, session_id: str) -> None:
        """Tell the people in the chat that its Python worker restarted."""
        try:
            # A status line the sidebar shows as it shows a retry's (and the events keep).
            frame = {"type": "status", "status": "thinking", "detail": WORKER_RESTARTED}
            await self.pipeline.emit(session_id, frame)
        except Exception:  # a notice is a courtesy: never fail the run for it
            log.debug("restart notice not sent", exc_info=True)


def chat_frame(run: ChatRun) -> ChatFrame:
    """The ``chat`` frame of a run's current attempt."""
    return ChatFrame(
        run_id=run.id,
        attempt=run.attempt,
        session_id=run.session_id,
        message_id=run.message_id,
        content=run.content,
        context=run.context,
    )
