"""Disk and rooms agree around every sandboxed run.

    files = FileSync(workspace)                 # ctx.services.files
    async with files.run(hold=60) as run:       # dirty rooms saved first; autosaves held
        result = await sandbox.run_bash("cat a.txt")
    run.changes                                 # Changes(created, modified, deleted)

Before the run every room of the workspace with unsaved changes (the agent's and people's) is
saved through the server's save path (``doc.flush``) and the run starts only after, so code
reads what the rooms show. After it, the files the run created, changed or deleted (from the
workspace watch, :mod:`.watch`) are merged into their open rooms as diffs (``doc.sync``) and
the held autosaves resume. Without a server (standalone) there is nothing to flush: file tools
write to disk at once and read changes from disk on their next access.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from .watch import Changes, SnapshotWatcher, Watcher, workspace_watcher

log = logging.getLogger(__name__)


class Rooms(Protocol):
    """The server's rooms, as a room-backed workspace reaches them."""

    async def flush_rooms(self, hold: float) -> str | None:
        """Save dirty rooms of the workspace; hold autosaves ``hold`` s; return the lease."""
        ...

    async def sync_rooms(self, paths: list[str], lease: str | None) -> list[str]:
        """Merge these files' changes on disk into their rooms; release the lease."""
        ...


class RunObserver(Protocol):
    """Told around each sandboxed run (the session's checkpoints)."""

    async def before_run(self) -> Any:
        """The rooms are saved and the run is about to start; return a token."""
        ...

    async def after_run(self, token: Any, changes: Changes) -> None:
        """The run ended having made ``changes`` (before they are merged into the rooms)."""
        ...

    def watching(self, watcher: Watcher) -> None:
        """The workspace watch has started (and is the one the runs will use)."""
        ...


SYNC_TIMEOUT = 10.0  # seconds a flush or merge may take before the run goes on without it


@dataclass
class RunFiles:
    """Filled in when the run's block ends."""

    changes: Changes = field(default_factory=Changes)
    merged: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class FileSync:
    """Flush before, watch during, merge after a sandboxed run."""

    def __init__(self, workspace: Any, watcher: Watcher | None = None) -> None:
        self.workspace = workspace
        self.watcher: Watcher = watcher or workspace_watcher(workspace.root)
        self._started = False
        #: Told around each run, to record what the run changes (``think_kernel.checkpoints``).
        self.observer: RunObserver | None = None

    @property
    def rooms(self) -> Rooms | None:
        """The room side, when the workspace is room-backed."""
        ws = self.workspace
        return ws if hasattr(ws, "flush_rooms") and hasattr(ws, "sync_rooms") else None

    async def start(self) -> None:
        """Set the watch up (falls back to snapshots if inotify is refused)."""
        if self._started:
            return
        try:
            await self.watcher.start()
        except Exception as e:  # e.g. EMFILE: too many inotify instances
            log.warning("file watch unavailable (%s); comparing snapshots instead", e)
            self.watcher = SnapshotWatcher(self.workspace.root)
        self._started = True
        if self.observer is not None:
            try:
                self.observer.watching(self.watcher)
            except Exception:  # runs matter more than their checkpoints
                log.exception("could not tell the checkpoints that the watch started")

    async def before(self, hold: float, out: RunFiles | None = None) -> tuple[Any, str | None, Any]:
        """Flush the rooms, then mark the watch; returns what :meth:`after` needs."""
        await self.start()
        rooms = self.rooms
        lease = None
        if rooms is not None:
            try:
                # asyncio.timeout, not wait_for: no task, so no loop turn before the request
                async with asyncio.timeout(SYNC_TIMEOUT):
                    lease = await rooms.flush_rooms(hold)
            except Exception as e:  # the link is down, the server refused: best effort
                log.warning("could not save the open documents before a run: %s", e)
                if out is not None:
                    out.warnings.append(
                        "warning: open documents could not be saved first; the code may "
                        "have read older versions of them"
                    )
        seen = await self.observer.before_run() if self.observer is not None else None
        return await self.watcher.mark(), lease, seen

    async def after(
        self, token: tuple[Any, str | None, Any], out: RunFiles | None = None
    ) -> RunFiles:
        """What the run changed, merged into the open rooms (the lease is released)."""
        mark, lease, seen = token
        out = out or RunFiles()
        out.changes = await self.watcher.since(mark)
        if self.observer is not None and out.changes:
            try:
                await self.observer.after_run(seen, out.changes)
            except Exception:  # the run's own result matters more than its checkpoint
                log.exception("could not record the run's changes in the checkpoint")
        rooms = self.rooms
        if rooms is not None:
            try:
                async with asyncio.timeout(SYNC_TIMEOUT):
                    out.merged = await rooms.sync_rooms(out.changes.paths(), lease)
            except Exception as e:  # the link is down, the server refused: best effort
                # The rooms' own poll merges them within a second or so.
                log.warning("could not merge the run's files into the open documents: %s", e)
        return out

    @asynccontextmanager
    async def run(self, hold: float) -> AsyncIterator[RunFiles]:
        """``async with files.run(hold) as run:`` around one sandboxed run."""
        result = RunFiles()
        token = await self.before(hold, result)
        try:
            yield result
        finally:
            # Also when the run was stopped: its writes are merged and the hold released.
            await asyncio.shield(self.after(token, result))

    def close(self) -> None:
        """Stop watching."""
        self.watcher.close()
