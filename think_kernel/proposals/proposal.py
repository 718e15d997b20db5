"""A session's proposal: its pending changes to files and notebooks, kept in the store.

    proposal = Proposal.of(runtime)               # the running session's
    if await proposal.is_active():                # review mode on (or this run proposes only)
        data = await proposal.read("src/a.py")    # bytes, None (deleted) or KEEP (not in it)
        await proposal.write("src/a.py", b"new\\n", base=b"old\\n")
        await proposal.delete("old.txt", base=b"gone\\n")
        await proposal.paths()                    # ["old.txt", "src/a.py"]

One row per file: the version the agent based its change on (``base``; None for a file it
created) and the content it proposes (``proposed``; None for a file it deleted). The first
base stays: later changes of the same file build on the proposal, and accepting merges the
whole change three-way against that base (:mod:`.decide`). A change that ends where it started
leaves nothing. Paths are workspace-relative POSIX strings, checked like every tool path
(no ``..``, no absolute path, none of Think's or Jupyter's private folders).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Final

from ..tools.workspace import check_relative


class _Keep:
    """Not in the proposal: read the workspace."""

    def __repr__(self) -> str:
        return "KEEP"


#: What :meth:`Proposal.read` answers for a path the proposal does not change.
KEEP: Final = _Keep()

#: The session option that turns review mode on (True) or off (False) for one session.
OPTION = "review"


def is_notebook(path: str) -> bool:
    """Notebooks (``.ipynb``) are diffed and decided cell by cell."""
    return path.endswith(".ipynb")


@dataclass(frozen=True)
class Change:
    """One file of a proposal."""

    path: str
    kind: str  # "file" | "notebook"
    base: bytes | None  # the version it is based on; None: the file was created
    proposed: bytes | None  # None: the file is deleted
    updated_at: float

    @property
    def status(self) -> str:
        """``created``, ``deleted`` or ``modified``."""
        if self.base is None:
            return "created"
        return "deleted" if self.proposed is None else "modified"


def _change(row: dict[str, Any]) -> Change:
    return Change(row["path"], row["kind"], row["base"], row["proposed"], row["updated_at"])


class Proposal:
    """The proposal of one session in one store (see the module doc)."""

    def __init__(self, store: Any, session_id: str, default: bool = False) -> None:
        self.store = store
        self.session_id = session_id
        #: Review mode where the session sets none (``c.ThinkConfig.review_mode``).
        self.default = default
        #: Edits of the running request go to the proposal whatever the session says
        #: (a message sent "propose only").
        self.forced = False
        #: Whether review mode was on when last asked (:meth:`is_active`).
        self.active = False

    @classmethod
    def of(cls, runtime: Any) -> Proposal:
        """The proposal of the runtime's current session (one object per runtime)."""
        have = getattr(runtime, "_proposal", None)
        if have is None or have.session_id != runtime.session_id or have.store is not runtime.store:
            have = cls(runtime.store, runtime.session_id, bool(runtime.config.review_mode))
            runtime._proposal = have
        return have

    async def is_active(self) -> bool:
        """Review mode for this session now: its option, else the configured default."""
        if self.forced:
            self.active = True
            return True
        options = await self.store.session_options(self.session_id)
        value = options.get(OPTION)
        self.active = self.default if value is None else bool(value)
        return self.active

    async def get(self, path: str) -> Change | None:
        """The proposed change of one file, or None."""
        row = await self.store._one(
            "SELECT * FROM proposals WHERE session_id = ? AND path = ?",
            (self.session_id, check_relative(path)),
        )
        return None if row is None else _change(row)

    async def changes(self) -> list[Change]:
        """Every proposed change, by path."""
        rows = await self.store._all(
            "SELECT * FROM proposals WHERE session_id = ? ORDER BY path", (self.session_id,)
        )
        return [_change(r) for r in rows]

    async def read(self, path: str) -> bytes | None | _Keep:
        """The proposed content (None: deleted), or :data:`KEEP` when the file is not in it."""
        change = await self.get(path)
        return KEEP if change is None else change.proposed

    async def write(self, path: str, data: bytes, base: bytes | None) -> None:
        """Propose ``data`` for ``path``; ``base`` is the version it was made from (None: the
        file did not exist). A file already in the proposal keeps its first base."""
        await self._put(check_relative(path), data, base)

    async def delete(self, path: str, base: bytes | None) -> None:
        """Propose deleting ``path`` (``base``: the version the agent saw)."""
        await self._put(check_relative(path), None, base)

    async def paths(self) -> list[str]:
        """The paths the proposal changes, sorted."""
        rows = await self.store._all(
            "SELECT path FROM proposals WHERE session_id = ? ORDER BY path", (self.session_id,)
        )
        return [r["path"] for r in rows]

    async def count(self) -> int:
        """How many files the proposal changes."""
        row = await self.store._one(
            "SELECT COUNT(*) AS n FROM proposals WHERE session_id = ?", (self.session_id,)
        )
        return int(row["n"]) if row else 0

    async def _put(self, rel: str, data: bytes | None, base: bytes | None) -> None:
        have = await self.get(rel)
        if have is not None:
            base = have.base
        await self.set(rel, base, data)

    async def set(self, rel: str, base: bytes | None, proposed: bytes | None) -> None:
        """Make the row of ``rel`` exactly this (no change left: no row)."""
        if base == proposed:
            await self.drop(rel)
            return
        kind = "notebook" if is_notebook(rel) else "file"
        await self.store._write(
            "INSERT INTO proposals (session_id, path, kind, base, proposed, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, path) DO UPDATE SET"
            " base = excluded.base, proposed = excluded.proposed,"
            " updated_at = excluded.updated_at",
            (self.session_id, rel, kind, base, proposed, time.time()),
        )

    async def drop(self, rel: str) -> None:
        """Forget the proposed change of ``rel``."""
        await self.store._write(
            "DELETE FROM proposals WHERE session_id = ? AND path = ?", (self.session_id, rel)
        )
