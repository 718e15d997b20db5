"""Which workspace files a sandboxed run created, changed or deleted.

    watcher = workspace_watcher(root)      # inotify on Linux, else a stat snapshot
    await watcher.start()                  # watches set up off the event loop
    mark = await watcher.mark()
    ...                                    # the sandboxed run
    changes = await watcher.since(mark)    # Changes(created=[...], modified=[...], deleted=[...])
    watcher.close()

On Linux every folder of the workspace is watched with inotify (``inotify_simple``), events
are drained into a log as they arrive, and :meth:`since` drains what is left (a finished
process's writes are already queued) and folds the log into the three lists: cost per run is
the events the run produced, not the size of the workspace. Elsewhere, or when inotify is
refused, :class:`SnapshotWatcher` compares ``(mtime, size)`` snapshots, bounded to
``max_files`` files. Tool-managed folders (``.git``, virtual environments, ``node_modules``,
caches) are neither watched nor reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..safefs import is_temp_name

log = logging.getLogger(__name__)

IGNORED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".think",
        ".ipynb_checkpoints",
        "__pycache__",
        "node_modules",
        ".venv",
        "venv",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".cache",
    }
)
#: Names the Jupyter server writes in the workspace on its own, never a run's work: the
#: collaboration history of a server set up the upstream way (and SQLite's side files), the
#: ``.~NAME`` copy jupyter_server's saves make first. Safe writes' temp files are matched by
#: :func:`~think_kernel.safefs.is_temp_name`; folders such as ``.ipynb_checkpoints`` and
#: ``.jupyter`` are hidden folders, not watched at all.
SERVER_FILE_PREFIXES = (".jupyter_ystore.db", ".~")
MAX_REPORTED = 50
# Folders one watch covers at most: a kernel started in a home folder must not take every
# inotify watch of the user (max_user_watches is 8192 on many systems). Past it, changes
# below unwatched folders are not reported (the rooms' own poll still merges open files).
MAX_WATCHED_DIRS = 5000


@dataclass
class Changes:
    """Workspace-relative POSIX paths a run created, modified or deleted."""

    created: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    incomplete: bool = False  # the watch lost events (queue overflow) or hit its limits
    #: Of ``created``, those that arrived by a rename onto the path (``sed -i``, an atomic
    #: save): a file may have been there before, which a checkpoint must not take as new.
    replaced: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.created or self.modified or self.deleted)

    def paths(self) -> list[str]:
        """Every path that changed, in order."""
        return [*self.created, *self.modified, *self.deleted]

    def summary(self, limit: int = MAX_REPORTED) -> str:
        """``created a.py; modified b.txt, c.txt; deleted d.csv`` (long lists cut)."""
        parts = []
        for verb, paths in (
            ("created", self.created),
            ("modified", self.modified),
            ("deleted", self.deleted),
        ):
            if paths and limit <= 0:
                parts.append(f"{verb} {len(paths)} file{'s' if len(paths) > 1 else ''}")
            elif paths:
                shown = ", ".join(paths[:limit])
                more = f" and {len(paths) - limit} more" if len(paths) > limit else ""
                parts.append(f"{verb} {shown}{more}")
        if self.incomplete:
            parts.append("(the watch missed some changes)")
        return "; ".join(parts)

    def brief(self, max_chars: int) -> str:
        """:meth:`summary` with as many names as fit in ``max_chars`` (the rest counted)."""
        for limit in (MAX_REPORTED, 20, 10, 5, 3, 2, 1, 0):
            text = self.summary(limit)
            if len(text) <= max_chars:
                return text
        return self.summary(0)[:max_chars]


def _fold(events: list[tuple[str, str]], incomplete: bool) -> Changes:
    """Fold ``(kind, path)`` events (kind: created, moved (renamed onto the path),
    modified, deleted) into Changes."""
    first: dict[str, str] = {}
    last: dict[str, str] = {}
    for kind, path in events:
        first.setdefault(path, kind)
        last[path] = kind
    out = Changes(incomplete=incomplete)
    for path in first:
        began, ended = first[path], last[path]
        if began in ("created", "moved") and ended == "deleted":
            continue  # a temporary file
        if ended == "deleted":
            out.deleted.append(path)
        elif began in ("created", "moved"):
            out.created.append(path)
            if began == "moved":
                out.replaced.append(path)
        else:
            out.modified.append(path)
    return out


class Watcher(Protocol):
    """What the file sync needs from a workspace watch."""

    async def start(self) -> None:
        """Set the watch up (idempotent)."""
        ...

    async def mark(self) -> Any:
        """A point in time; :meth:`since` reports what changed after it."""
        ...

    async def since(self, mark: Any) -> Changes:
        """What changed between ``mark`` and now."""
        ...

    def folders(self) -> list[str]:
        """The folders whose files' changes are reported as they happen (shallowest first);
        empty when changes are found by comparing snapshots."""
        ...

    def close(self) -> None:
        """Stop watching."""
        ...


def server_owned(path: str) -> bool:
    """Whether a workspace path is one of the server's own files (never reported)."""
    name = path.rpartition("/")[2]
    return name.startswith(SERVER_FILE_PREFIXES) or is_temp_name(name)


def _ignored(name: str) -> bool:
    # Hidden folders are tool state (.git, .config, .local in a home folder), not work.
    return name in IGNORED_DIRS or name.startswith(".") or name.endswith(".egg-info")


class InotifyWatcher:
    """Recursive inotify watch of one workspace (Linux)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        self._inotify: Any = None
        self._dirs: dict[int, str] = {}  # watch descriptor -> relative folder ("" is the root)
        self._log: list[tuple[int, str, str]] = []  # (n, kind, path)
        self._n = itertools.count(1)
        self._last = 0
        self._marks: dict[int, int] = {}
        self._mark_ids = itertools.count(1)
        self._overflow_at = -1
        self._capped = False
        self._lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        """Create the inotify instance and watch every folder (in a thread: big trees)."""
        async with self._lock:
            if self._inotify is not None:
                return
            from inotify_simple import INotify

            inotify = INotify(nonblocking=True)
            try:
                await asyncio.to_thread(self._watch_tree, inotify, "")
            except BaseException:
                inotify.close()
                raise
            self._inotify = inotify
            self._loop = asyncio.get_running_loop()
            self._loop.add_reader(inotify.fileno(), self._drain)

    def _mask(self) -> int:
        from inotify_simple import flags

        return int(
            flags.CREATE
            | flags.DELETE
            | flags.MODIFY
            | flags.CLOSE_WRITE
            | flags.MOVED_FROM
            | flags.MOVED_TO
            | flags.DONT_FOLLOW
            | flags.ONLYDIR
        )

    def _watch_tree(self, inotify: Any, rel: str) -> list[str]:
        """Watch ``rel`` and the folders below it; return the files found (for new folders)."""
        files: list[str] = []
        stack = [rel]
        mask = self._mask()
        while stack:
            cur = stack.pop()
            full = self.root / cur if cur else self.root
            if len(self._dirs) >= MAX_WATCHED_DIRS:
                if not self._capped:
                    self._capped = True
                    log.warning(
                        "watching %d folders at most; %s and others are not", len(self._dirs), cur
                    )
                continue
            try:
                wd = inotify.add_watch(str(full), mask)
            except OSError as e:  # ENOSPC (max_user_watches), or the folder went away
                if e.errno == 28:
                    self._overflow_at = max(self._overflow_at, self._last)
                    log.warning("inotify watch limit reached at %s; changes below go unseen", cur)
                continue
            self._dirs[wd] = cur
            try:
                entries = list(os.scandir(full))
            except OSError:
                continue
            for entry in entries:
                child = f"{cur}/{entry.name}" if cur else entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if not _ignored(entry.name):
                            stack.append(child)
                    else:
                        files.append(child)
                except OSError:
                    continue
        return files

    def _drain(self) -> None:
        """Read every queued event into the log (called when the fd is readable, and before
        a report)."""
        if self._inotify is None:
            return
        from inotify_simple import flags

        try:
            events = self._inotify.read(timeout=0)
        except (BlockingIOError, OSError):
            return
        for ev in events:
            if ev.mask & flags.Q_OVERFLOW:
                self._overflow_at = next(self._n)
                continue
            folder = self._dirs.get(ev.wd)
            if folder is None:
                continue
            if ev.mask & flags.IGNORED:
                self._dirs.pop(ev.wd, None)
                continue
            path = f"{folder}/{ev.name}" if folder else ev.name
            if server_owned(ev.name):
                continue
            if ev.mask & flags.ISDIR:
                if ev.mask & (flags.CREATE | flags.MOVED_TO) and not _ignored(ev.name):
                    # Files written before the watch on the new folder existed are found by
                    # scanning it now.
                    assert self._inotify is not None
                    for found in self._watch_tree(self._inotify, path):
                        if not server_owned(found):
                            self._log.append((next(self._n), "created", found))
                continue
            if ev.mask & flags.CREATE:
                kind = "created"
            elif ev.mask & flags.MOVED_TO:
                kind = "moved"
            elif ev.mask & (flags.DELETE | flags.MOVED_FROM):
                kind = "deleted"
            else:
                kind = "modified"
            self._log.append((next(self._n), kind, path))
        if self._log:
            self._last = self._log[-1][0]

    async def mark(self) -> int:
        """The current position in the event log."""
        await self.start()
        self._drain()
        mark_id = next(self._mark_ids)
        self._marks[mark_id] = self._last
        return mark_id

    async def since(self, mark: int) -> Changes:
        """What changed after ``mark`` (the mark is used up)."""
        self._drain()
        start = self._marks.pop(mark, self._last)
        events = [(kind, path) for n, kind, path in self._log if n > start]
        changes = _fold(events, self._overflow_at > start)
        # Keep only what an open mark still needs.
        floor = min(self._marks.values(), default=self._last)
        self._log = [e for e in self._log if e[0] > floor]
        return changes

    def folders(self) -> list[str]:
        """The watched folders, shallowest first ("" is the root)."""
        return sorted(set(self._dirs.values()), key=lambda f: (f.count("/") + bool(f), f))

    def close(self) -> None:
        """Stop watching."""
        if self._inotify is not None:
            if self._loop is not None and not self._loop.is_closed():
                with contextlib.suppress(Exception):
                    self._loop.remove_reader(self._inotify.fileno())
            self._inotify.close()
            self._inotify = None


class SnapshotWatcher:
    """``(mtime, size)`` snapshots of the workspace, for systems without inotify."""

    def __init__(self, root: str | os.PathLike[str], max_files: int = 20_000) -> None:
        self.root = Path(root).resolve()
        self.max_files = max_files

    async def start(self) -> None:
        """Nothing to set up."""

    def _snapshot(self) -> tuple[dict[str, tuple[int, int]], bool]:
        seen: dict[str, tuple[int, int]] = {}
        stack = [""]
        while stack:
            cur = stack.pop()
            try:
                entries = list(os.scandir(self.root / cur if cur else self.root))
            except OSError:
                continue
            for entry in entries:
                rel = f"{cur}/{entry.name}" if cur else entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if not _ignored(entry.name):
                            stack.append(rel)
                        continue
                    if server_owned(entry.name):
                        continue
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                seen[rel] = (st.st_mtime_ns, st.st_size)
                if len(seen) >= self.max_files:
                    return seen, True
        return seen, False

    async def mark(self) -> tuple[dict[str, tuple[int, int]], bool]:
        """A snapshot of the workspace."""
        return await asyncio.to_thread(self._snapshot)

    async def since(self, mark: tuple[dict[str, tuple[int, int]], bool]) -> Changes:
        """The difference between ``mark`` and a new snapshot."""
        before, cut = mark
        after, cut_now = await asyncio.to_thread(self._snapshot)
        out = Changes(incomplete=cut or cut_now)
        for path, stat in after.items():
            old = before.get(path)
            if old is None:
                out.created.append(path)
            elif old != stat:
                out.modified.append(path)
        out.deleted = [p for p in before if p not in after]
        return out

    def folders(self) -> list[str]:
        """None: a snapshot watch reports changes only when asked."""
        return []

    def close(self) -> None:
        """Nothing to release."""


def workspace_watcher(root: str | os.PathLike[str]) -> Watcher:
    """The best watcher for this system: inotify on Linux, else snapshots."""
    if sys.platform.startswith("linux"):
        try:
            import inotify_simple  # noqa: F401

            return InotifyWatcher(root)
        except ImportError:
            pass
    return SnapshotWatcher(root)
