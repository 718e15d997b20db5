"""One ``%think`` / ``%%think`` in a cell: the run's events rendered live in the cell.

    CellRun(magics, request, out_name).run_sync()        # a plain (blocking) cell
    await CellRun(magics, request, out_name).run_async() # an awaited cell (widgets work)

The run itself goes on the magics' private loop (another thread); its events come to the
cell's thread through a :class:`Mailbox`, which wakes that thread only when it must act:
``run_in_kernel`` code, figures, approval cards, the end of the run, or the first event after
an up-to-date display. Everything else waits for the next display (at most one per
``display_interval``): each wake-up is a hop between two threads that share one GIL, and a fast
run used to make fifteen of them.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.display import display, update_display

from ..safeoutput import safe_bundle
from ..waits import wait_for
from .userkernel import KernelExec, execute

if TYPE_CHECKING:
    from .magics import ThinkMagics

DONE = object()
INTERRUPT_GRACE = 5.0
IDLE_TICK = 0.5  # seconds between redraws of an unchanged display (a retry countdown)


class Stopped(Exception):
    """The stop button in an awaited %think cell (shown like any stopped cell)."""

    def _render_traceback_(self) -> list[str]:
        return ["KeyboardInterrupt: the run was stopped"]


# ipykernel cancels an awaited cell on interrupt; a real KeyboardInterrupt raised in an asyncio
# task would stop the kernel's loop, so the cell ends with an Exception of the usual name.
Stopped.__name__ = Stopped.__qualname__ = "KeyboardInterrupt"


def _urgent(item: Any) -> bool:
    """Items the cell's thread must handle now, not at the next display."""
    from ..agent.events import (
        ApprovalRequested,
        ApprovalResolved,
        QuestionAnswered,
        QuestionAsked,
        ToolResult,
    )

    waits = (ApprovalRequested, ApprovalResolved, QuestionAsked, QuestionAnswered)
    if item is DONE or isinstance(item, (KernelExec, *waits)):
        return True
    return isinstance(item, ToolResult) and bool(item.display)


class Mailbox:
    """Items from the run's thread to the cell's, with as few wake-ups as needed.

    ``put`` (any thread) appends and calls ``signal`` for an urgent item, or when the cell's
    thread said it waits for anything (``wanted``, set before a wait with no display due).
    """

    def __init__(self, signal: Callable[[], object]) -> None:
        self.items: collections.deque[Any] = collections.deque()
        self.signal = signal
        self.wanted = False

    def put(self, item: Any) -> None:
        """Hand one item to the cell (thread-safe)."""
        self.items.append(item)
        if self.wanted or _urgent(item):
            self.wanted = False
            self.signal()

    def take(self) -> list[Any]:
        """Everything handed over so far, in order."""
        out = []
        while self.items:
            out.append(self.items.popleft())
        return out


def _streams_clean() -> bool:
    """True when stdout and stderr (ipykernel's OutStreams) hold nothing unsent."""
    for stream in (sys.stdout, sys.stderr):
        buffers = getattr(stream, "_buffers", None)
        if buffers is None or len(buffers) or getattr(stream, "_flush_pending", False):
            return False  # not ipykernel's stream (or another version): flush as usual
    return True


def _nothing() -> None:
    return None


def _display(
    shell: Any, bundle: dict[str, Any], display_id: str, metadata: dict[str, Any], update: bool
) -> None:
    """Show or update a display. ipykernel flushes stdout and stderr before every display,
    each a round trip to its IO thread (slow when the cores are busy); when they hold
    nothing, there is nothing to keep in order and the flushes are skipped."""
    pub: Any = getattr(shell, "display_pub", None)
    quiet = (
        pub is not None
        and callable(getattr(pub, "_flush_streams", None))
        and not getattr(pub, "_hooks", None)  # an Output widget capturing: the usual path
        and _streams_clean()
    )
    if quiet:
        pub._flush_streams = _nothing
    try:
        if update:
            update_display(bundle, raw=True, display_id=display_id, metadata=metadata)
        else:
            display(bundle, raw=True, display_id=display_id, metadata=metadata)
    finally:
        if quiet:
            with contextlib.suppress(AttributeError):
                del pub._flush_streams


class CellRun:
    """One ``%think`` in a cell: events rendered live, run_in_kernel executed here, approval
    cards shown (buttons that work while the cell runs, when the cell is awaited)."""

    def __init__(self, magics: ThinkMagics, request: str, out_name: str | None) -> None:
        from .namespace import summarize_namespace
        from .render import Transcript

        self.magics = magics
        self.request = request
        self.out_name = out_name
        shell = magics.shell
        hidden = set(getattr(shell, "user_ns_hidden", {}) or {})
        self.context = "The user's Python variables:\n" + (
            summarize_namespace(shell.user_ns, hidden) or "(none)"
        )
        self.runtime = magics.runtime()
        self.interval = float(self.runtime.config.display_interval)
        self.view = Transcript()
        self.display_id = uuid.uuid4().hex
        self.meta = {"think": {"session_id": self.runtime.session_id}}
        self.answer: str | None = None
        self.cards: dict[str, Any] = {}
        self.card_ids: dict[str, tuple[str, dict[str, Any]]] = {}  # approval id: display, event
        self.widgets = False
        # The transcript is first shown like any pending update, one display interval after
        # the cell starts: a run that ends sooner shows one display, not three.
        self.shown = False
        self.last = time.monotonic()
        self.dirty = True

    # -- rendering ---------------------------------------------------------------------------

    def show(self, final: bool = False) -> None:
        """Show the transcript display of this cell, or update it once it is shown."""
        md = self.view.render(final=final, now=time.monotonic())
        bundle = safe_bundle({"text/markdown": md, "text/plain": md})
        _display(self.magics.shell, bundle, self.display_id, self.meta, update=self.shown)
        self.shown = True

    def _show_first(self) -> None:
        """Show the transcript before anything that must appear below it."""
        if not self.shown:
            self.show()

    def feed(self, event: Any) -> bool:
        """Handle one item from the run; True when the transcript changed."""
        from ..agent.events import (
            ApprovalRequested,
            ApprovalResolved,
            Chat,
            ErrorEvent,
            QuestionAnswered,
            QuestionAsked,
            ToolResult,
        )

        if isinstance(event, KernelExec):
            self._show_first()
            self._execute(event)
            return False
        if isinstance(event, ToolResult) and event.display:
            self._show_first()
            # Figures and screenshots from sandboxed tools, below the transcript (our
            # ``think`` metadata is not a MIME type and stays out of the notebook).
            for bundle in event.display:
                data = {k: v for k, v in bundle.items() if "/" in k}
                if data:
                    display(safe_bundle(data), raw=True)
        if isinstance(event, (ApprovalRequested, QuestionAsked)):
            self._card(event.to_dict())
        elif isinstance(event, (ApprovalResolved, QuestionAnswered)):
            self._decided(event.to_dict())
        changed = self.view.feed(event, time.monotonic())
        if isinstance(event, Chat):
            self.answer = event.content
        elif isinstance(event, ErrorEvent):
            self.answer = None
        return changed

    def _execute(self, request: KernelExec) -> None:
        try:
            request.future.set_result(execute(self.magics.shell, request.code))
        except BaseException as e:  # the future must be answered, whatever happened
            request.future.set_exception(e)
            if isinstance(e, KeyboardInterrupt):
                raise

    def _card(self, event: dict[str, Any]) -> None:
        from ..questions.widget import card_for, pending_text

        self._show_first()
        display_id = uuid.uuid4().hex
        self.card_ids[event["id"]] = (display_id, event)
        if not self.widgets:
            # A blocked cell cannot receive clicks: the text says how to decide elsewhere.
            text = pending_text(event, self.runtime.session_id, buttons=False)
            display({"text/plain": text}, raw=True, display_id=display_id)
            return
        loop = self.magics.loop
        runtime = self.runtime

        def decide(frame: dict[str, Any]) -> None:
            asyncio.run_coroutine_threadsafe(runtime.resolve_approval(event["id"], frame), loop)

        card = card_for(event, decide, runtime.session_id)
        self.cards[event["id"]] = card
        # The widget, and the text that a run with no page (papermill) records of it.
        display(card.bundle(), raw=True, display_id=display_id)

    def _decided(self, decision: dict[str, Any]) -> None:
        """A card's approval was decided, or its question answered (from any surface): its
        output says so."""
        from ..questions.widget import settled_text

        shown = self.card_ids.pop(decision.get("id", ""), None)
        if shown is None:
            return
        display_id, request = shown
        card = self.cards.get(decision["id"])
        if card is not None:
            card.resolved(decision)
            data = card.bundle()
        else:
            data = {"text/plain": settled_text(request, decision)}
        update_display(data, raw=True, display_id=display_id)

    def finish(self) -> None:
        """Final render; ``-o NAME`` keeps the answer."""
        self.show(final=True)
        if self.out_name:
            value = self.answer if self.answer is not None else self.view.final_text
            self.magics.shell.user_ns[self.out_name] = value

    # -- drivers -----------------------------------------------------------------------------

    def _produce(self, box: Mailbox) -> concurrent.futures.Future[None]:
        from ..agent.events import ErrorEvent

        runtime, request, context = self.runtime, self.request, self.context

        async def produce() -> None:
            try:
                async for event in runtime.run(request, context=context):
                    box.put(event)
            except Exception as e:  # a bug below us: a message in the cell, not a traceback
                box.put(ErrorEvent(f"internal error: {type(e).__name__}: {e}", "internal"))
            finally:
                box.put(DONE)

        return asyncio.run_coroutine_threadsafe(produce(), self.magics.loop)

    def _wait_for(self, box: Mailbox) -> float:
        """How long the cell's thread may sleep now (and whether any item must wake it)."""
        if self.dirty:  # a display is due at last + interval: nothing else needs us sooner
            box.wanted = False
            return max(0.0, self.last + self.interval - time.monotonic())
        box.wanted = True
        return 0.0 if box.items else IDLE_TICK

    def _step(self, box: Mailbox) -> bool:
        """Handle what came in, redraw when due; True once the run is over."""
        items = box.take()
        for item in items:
            if item is DONE:
                return True
            self.dirty = self.feed(item) or self.dirty
        now = time.monotonic()
        tick = not items and self.view.status == "waiting"  # a retry countdown
        if (self.dirty and now - self.last >= self.interval) or tick:
            self.show()
            self.last, self.dirty = now, False
        return False

    def run_sync(self) -> None:
        """Drive the run from a cell that blocks (no asyncio loop in this thread)."""
        wake = threading.Event()
        box = Mailbox(wake.set)
        self.magics._cell_sink = box.put
        fut = self._produce(box)
        try:
            while True:
                wait = self._wait_for(box)
                if wait > 0:
                    wake.wait(wait)
                wake.clear()
                if self._step(box):
                    break
        except KeyboardInterrupt:
            fut.cancel()  # cancels the task on the private loop
            with contextlib.suppress(Exception):
                concurrent.futures.wait([fut], INTERRUPT_GRACE)
            self.view.add_note("*Interrupted.*")
            self.show(final=True)
            raise
        finally:
            self.magics._cell_sink = None
        self.finish()

    async def run_async(self) -> None:
        """Drive the run from an awaited cell: the kernel keeps dispatching comms."""
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        box = Mailbox(lambda: loop.call_soon_threadsafe(wake.set))
        self.widgets = True
        self.magics._cell_sink = box.put
        fut = self._produce(box)
        try:
            while True:
                wait = self._wait_for(box)
                if wait > 0:
                    with contextlib.suppress(TimeoutError):
                        await wait_for(wake.wait(), wait)
                wake.clear()
                if self._step(box):
                    break
        except (asyncio.CancelledError, KeyboardInterrupt):
            fut.cancel()
            self.view.add_note("*Interrupted.*")
            self.show(final=True)
            with contextlib.suppress(Exception):
                await asyncio.to_thread(concurrent.futures.wait, [fut], INTERRUPT_GRACE)
            raise Stopped() from None
        finally:
            self.magics._cell_sink = None
        self.finish()
