"""Taking back what ``remember`` added to the memory file, by its action-log row.

    notes = await remembered(store, memory)        # the agent's notes, newest first
    line = await undo_remember(store, memory, sid, action_id="a_1b2c")
    line = await undo_remember(store, memory, sid, line="- 2026-11-28: ...")

Every ``remember`` call is an action-log row whose output summary is the line it wrote
(``remembered: <line>``); an undo takes exactly that line out of the file (the person may have
changed the rest) and is logged in turn. ``%think_memory undo`` and the sidebar's Undo on a
``remember`` card both end here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store import Store
    from .notes import MemoryFile

PREFIX = "remembered: "


class UndoError(ValueError):
    """Nothing to undo: the message says why (``missing``: no such ``remember`` call)."""

    def __init__(self, message: str, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


@dataclass(frozen=True)
class Note:
    """A line ``remember`` added, and whether the file still has it."""

    action_id: str
    session_id: str
    ts: float
    line: str
    present: bool

    def as_json(self) -> dict[str, Any]:
        """The REST shape."""
        return {
            "action_id": self.action_id,
            "session_id": self.session_id,
            "ts": self.ts,
            "line": self.line,
            "present": self.present,
        }


async def remembered(store: Store, memory: MemoryFile) -> list[Note]:
    """The notes ``remember`` added in this workspace's sessions, newest first."""
    present = {ln.rstrip() for ln in memory.read().splitlines()}
    notes = []
    for row in await store.recent_actions("remember"):
        summary = str(row["output_summary"])
        if summary.startswith(PREFIX):
            line = summary[len(PREFIX) :]
            notes.append(Note(row["id"], row["session_id"], row["ts"], line, line in present))
    return notes


async def undo_remember(
    store: Store, memory: MemoryFile, session_id: str, action_id: str = "", line: str = ""
) -> str:
    """Take out the note of one ``remember`` call (by its action id or its line; neither:
    the newest still in the file); return the line. UndoError says why there is none."""
    notes = await remembered(store, memory)
    if action_id or line:
        notes = [n for n in notes if (not action_id or n.action_id == action_id)]
        notes = [n for n in notes if (not line or n.line == line)]
        if not notes:
            raise UndoError("no such remember call in this workspace", missing=True)
    note = next((n for n in notes if n.present), None)
    if note is None or not memory.remove(note.line):
        raise UndoError("nothing to undo: no note the agent added is in the memory file")
    await store.log_action(
        session_id=session_id or note.session_id,
        tool="think_memory",
        action="undo remember",
        input_summary=f"action={note.action_id}",
        output_summary=f"removed: {note.line}",
        success=True,
    )
    return note.line
