"""Where people are typing in a room, so the agent leaves that cell or those lines alone.

    activity = RoomActivity(room.ydoc, room.awareness, notebook=True, ready=lambda: room.ready)
    hit = activity.busy(2.0, cell_id="c1")              # or lines=(10, 14) for a file
    if hit:
        hit.detail      # "waiting for you to finish typing in cell 3"
        hit.quiet_in    # seconds until that activity is 2 s old

Two signals, both from the room the agent edits through:

- edits whose transaction has no origin (updates from a client's websocket; the agent's own
  edits carry ``Think:<action>``, merges from disk ``disk``): the cell and line they touched;
- Yjs awareness: a collaborator's cursor that moved (JupyterLab's ``cursors`` field, Yjs
  relative positions). In a file its line is resolved; in a notebook it is matched against the
  cell the agent wants to edit. A position that cannot be resolved is ignored (edits still
  count).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pycrdt import Array, Assoc, Awareness, Doc, StickyIndex, Text


@dataclass
class Busy:
    """Recent activity where the agent wants to edit."""

    detail: str
    quiet_in: float


def _is_person(origin: Any) -> bool:
    return origin is None or not (isinstance(origin, str) and origin.startswith(("Think", "disk")))


def _line_at(text: str, byte_index: int) -> int:
    return text.encode("utf-8")[: max(0, byte_index)].count(b"\n")


def _resolve(position: Any, text: Text) -> int | None:
    """The byte index of a JSON relative position in ``text``, or None.

    pycrdt raises (even panics) on positions it cannot place: they count as unknown.
    """
    if not isinstance(position, dict) or not position.get("item"):
        return None
    try:
        index = StickyIndex.from_json(position, text).get_index()
        if index >= len(str(text).encode("utf-8")) or index < 0:
            return None
        # The item may belong to another text of the document: check it is this one's.
        again = StickyIndex.new(text, index, Assoc(int(position.get("assoc") or 0)))
        if again.to_json().get("item") != position.get("item"):
            return None
        return index
    except BaseException as e:  # pyo3's PanicException is a BaseException
        if isinstance(e, (KeyboardInterrupt, SystemExit, GeneratorExit)):
            raise
        return None


class RoomActivity:
    """Recent edits and cursor moves of the people in one document."""

    def __init__(
        self,
        ydoc: Doc,
        awareness: Awareness | None,
        notebook: bool,
        *,
        ready: Callable[[], bool] = lambda: True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ydoc = ydoc
        self.awareness = awareness
        self.notebook = notebook
        self.ready = ready  # updates before the room is ready are its content loading
        self.clock = clock
        # (time, cell id or None, line) of edits by people, newest last
        self.edits: deque[tuple[float, str | None, int]] = deque(maxlen=256)
        self.moved: dict[int, float] = {}  # awareness client -> last cursor change
        self.cells: Array[Any] = ydoc.get("cells", type=Array) if notebook else Array()
        self.source: Text = ydoc.get("source", type=Text) if not notebook else Text()
        if notebook:
            self.cells.observe_deep(self._on_cells)
        else:
            self.source.observe(self._on_text)
        if awareness is not None:
            awareness.observe(self._on_awareness)

    # -- observers ---------------------------------------------------------------------------

    def _on_text(self, event: Any) -> None:
        if not _is_person(event.transaction.origin) or not self.ready():
            return
        retain = event.delta[0].get("retain", 0) if event.delta else 0
        self.edits.append((self.clock(), None, _line_at(str(event.target), retain)))

    def _on_cells(self, events: list[Any]) -> None:
        for event in events:
            path = getattr(event, "path", None) or []
            if len(path) != 2 or path[1] != "source" or not _is_person(event.transaction.origin):
                continue
            if not self.ready():
                return
            try:
                cell_id = str(self.cells[path[0]].get("id"))
            except (IndexError, KeyError):
                continue
            retain = event.delta[0].get("retain", 0) if event.delta else 0
            self.edits.append((self.clock(), cell_id, _line_at(str(event.target), retain)))

    def _on_awareness(self, topic: str, changes: tuple[dict[str, Any], Any]) -> None:
        # "change": a state changed (a cursor moved); "update" also fires on the periodic
        # renewals of unchanged states, so only its newly added clients count.
        moved = changes[0].get("added", [])
        if topic == "change":
            moved = [*moved, *changes[0].get("updated", [])]
        own = self.ydoc.client_id
        now = self.clock()
        for client in moved:
            if client != own:
                self.moved[client] = now

    # -- the question ------------------------------------------------------------------------

    def _cursor_heads(self, since: float) -> list[tuple[float, Any]]:
        if self.awareness is None:
            return []
        out = []
        for client, at in self.moved.items():
            if at < since:
                continue
            state = self.awareness.states.get(client) or {}
            for cursor in state.get("cursors") or []:
                if isinstance(cursor, dict) and cursor.get("head"):
                    out.append((at, cursor["head"]))
        return out

    def busy(
        self,
        window: float,
        *,
        cell_id: str | None = None,
        lines: tuple[int, int] | None = None,
    ) -> Busy | None:
        """Activity in the last ``window`` seconds in ``cell_id`` (a notebook) or on ``lines``
        (0-based ``[start, end)`` of a file; None: anywhere)."""
        now = self.clock()
        since = now - window
        latest: float | None = None
        where = ""
        for at, cid, line in reversed(self.edits):
            if at < since:
                break
            if self.notebook and cid == cell_id:
                latest, where = at, self._cell_name(cell_id)
                break
            if not self.notebook and _touches(line, lines):
                latest, where = at, f"at line {line + 1}"
                break
        for at, head in self._cursor_heads(since):
            if latest is not None and at <= latest:
                continue
            text = self._text(cell_id)
            if text is None:
                continue
            index = _resolve(head, text)
            if index is None:
                continue
            line = _line_at(str(text), index)
            if self.notebook or _touches(line, lines):
                latest = at
                where = self._cell_name(cell_id) if self.notebook else f"at line {line + 1}"
        if latest is None:
            return None
        verb = "in" if self.notebook else ""
        detail = f"waiting for you to finish typing {verb} {where}".replace("  ", " ")
        return Busy(detail, max(0.05, latest + window - now))

    def _text(self, cell_id: str | None) -> Text | None:
        if not self.notebook:
            return self.source
        for cell in self.cells:
            if str(cell.get("id")) == cell_id:
                source = cell.get("source")
                return source if isinstance(source, Text) else None
        return None

    def _cell_name(self, cell_id: str | None) -> str:
        for i, cell in enumerate(self.cells):
            if str(cell.get("id")) == cell_id:
                return f"cell {i + 1}"
        return "the cell"


def _touches(line: int, lines: tuple[int, int] | None) -> bool:
    if lines is None:
        return True
    start, end = lines
    return start <= line <= max(start, end)
