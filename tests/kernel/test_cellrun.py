"""The mailbox between a %%think run and its cell's thread (think_kernel/kernel/cellrun.py): the
cell's thread is woken for what it must do now, not for every event (each wake-up
is a hop between two threads that share the GIL)."""

from __future__ import annotations

from think_kernel.agent.events import (
    ApprovalRequested,
    StatusEvent,
    TextDelta,
    ToolResult,
)
from think_kernel.kernel.cellrun import DONE, Mailbox
from think_kernel.kernel.userkernel import KernelExec


def test_only_urgent_items_wake_the_cell_while_a_display_is_due() -> None:
    woken: list[int] = []
    box = Mailbox(lambda: woken.append(len(box.items)))
    box.put(StatusEvent("thinking", "step 1"))
    box.put(TextDelta("m1", "Hel"))
    box.put(TextDelta("m1", "lo"))
    box.put(ToolResult("c1", "bash", "ok", 1.0, True))  # no figure: waits for the display
    assert woken == []
    box.put(ToolResult("c2", "bash", "ok", 1.0, True, display=[{"image/png": "iVBO"}]))
    box.put(KernelExec("df.price.plot()"))
    box.put(ApprovalRequested(id="ap1", tool="delete_file", input={}))
    box.put(DONE)
    assert woken == [5, 6, 7, 8]
    items = box.take()
    assert len(items) == 8 and items[-1] is DONE and box.take() == []


def test_a_cell_waiting_for_anything_is_woken_once_by_the_next_item() -> None:
    woken: list[object] = []
    box = Mailbox(lambda: woken.append(True))
    box.wanted = True  # the display is up to date: the next event starts a new one
    box.put(TextDelta("m1", "a"))
    box.put(TextDelta("m1", "b"))
    assert len(woken) == 1 and not box.wanted
    assert [e.delta for e in box.take()] == ["a", "b"]
