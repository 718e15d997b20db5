"""Is a subagent still alive? The verdict (pure) and what to do when it is lost.

A subagent runs in the kernel that spawned it; its task row names that process
(``subagent_owner``: host, pid, start token) and is heartbeated while it runs. Whoever finds
a row still ``running`` (the server's durable ``subagent_check`` schedules: first after
``first`` seconds, then every ``every``, a bounded number of times; or a kernel starting on
the session, which recovers what a dead one left) asks :func:`verdict`:

    code, why = verdict(row, time.time(), alive=owner_alive, stale_after=30)
    if code in ("interrupted", "timeout"):
        await mark_lost(board, row, code, why)    # first writer wins

``mark_lost`` ends the subagent (conditionally: only if still running), fails its task,
rejects the approvals it was waiting for, emits ``subagent_error`` and stores a report for
the parent's next model call.
"""

from __future__ import annotations

import math
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..agent.events import SubagentError
from ..approvals.record import decide, decision_record
from ..questions.spec import closing_record
from ..tasks.graph import TaskError

if TYPE_CHECKING:
    from ..tasks.board import TaskBoard

#: A subagent may overrun its timeout by this much before a watcher calls it: its own
#: kernel enforces the timeout and reports it better.
GRACE = 10.0
REPORT = "subagent_report"  # the name of the report messages (agent/messages.py shows them)
_EPOCH = uuid.uuid4().hex[:8]


@dataclass(frozen=True)
class Checks:
    """When watchers look (seconds) and when a silent subagent counts as lost."""

    first: float = 30.0
    every: float = 60.0
    stale_after: float = 30.0

    def attempts(self, timeout: float) -> int:
        """Checks needed to see a subagent through its timeout (and one more)."""
        return 2 + max(0, math.ceil((timeout + GRACE - self.first) / max(self.every, 1.0)))


def this_owner() -> str:
    """This process as a subagent owner: ``host/pid/token``."""
    return f"{socket.gethostname()}/{os.getpid()}/{_EPOCH}"


def owner_alive(owner: str) -> bool | None:
    """Whether the owning process runs: None when it cannot be told (another host, an
    unreadable owner); a zombie counts as dead."""
    host, _, rest = (owner or "").partition("/")
    pid_text, _, token = rest.partition("/")
    if host != socket.gethostname() or not pid_text.isdigit():
        return None
    pid = int(pid_text)
    if pid == os.getpid():
        return token == _EPOCH
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed kernel its parent has not reaped yet
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True


def verdict(
    row: dict[str, Any],
    now: float,
    *,
    alive: Callable[[str], bool | None],
    stale_after: float,
) -> tuple[str, str]:
    """``(code, why)``: ``done`` (not running any more), ``running``, ``timeout`` or
    ``interrupted``."""
    if row.get("subagent_status") != "running":
        return "done", ""
    deadline = row.get("subagent_deadline")
    if deadline is not None and now > float(deadline) + GRACE:
        started = float(row.get("subagent_started_at") or deadline)
        return "timeout", f"it ran past its timeout ({float(deadline) - started:.0f} s)"
    if alive(str(row.get("subagent_owner") or "")) is False:
        return "interrupted", "the kernel running it stopped before it finished"
    beat = row.get("subagent_heartbeat_at") or row.get("subagent_started_at") or now
    if now - float(beat) > stale_after:
        return "interrupted", f"its kernel went silent (no heartbeat for {now - float(beat):.0f} s)"
    return "running", ""


def report_text(row: dict[str, Any], code: str, why: str) -> str:
    """What the parent agent (and the chat) is told about a lost subagent."""
    title = row.get("title") or row["id"]
    return (
        f"The subagent working on task {row['id']} ({title}) was {code}: {why}. Its task "
        "is marked failed; what it already changed in the workspace stays. Check the "
        "workspace, then delegate the task again or do it yourself."
    )


async def mark_lost(
    board: TaskBoard, row: dict[str, Any], code: str, why: str
) -> dict[str, Any] | None:
    """End a lost subagent (if nobody else did): its task fails, ``subagent_error`` goes
    out, a report is stored in the parent's conversation. Returns the report message, or
    None when the subagent was no longer running."""
    won = await board.set_subagent(
        row["id"], when_status="running", subagent_status=code, subagent_ended_at=time.time()
    )
    if not won:
        return None
    try:
        await board.fail(row["id"], f"subagent {code}: {why}")
    except TaskError:
        pass  # the task already ended (cancelled with its request)
    # Nobody waits for what it asked any more: its pending approvals count as rejected.
    record = decision_record("reject", reason=f"the subagent was {code}", source="cancel")
    closed = closing_record("", source="cancel")  # and its questions are closed unanswered
    for approval in await board.store.list_approvals(row["session_id"], "pending", kind=None):
        if approval.get("task_id") == row["id"]:
            question = approval.get("kind") == "question"
            await decide(board.store, approval, closed if question else record)
    await board.send(SubagentError(row["id"], why, code))
    return await board.store.add_message(
        row["session_id"],
        "system",
        report_text(row, code, why),
        name=REPORT,
        status="complete",
    )
