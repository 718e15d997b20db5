"""One checkpoint per user message, filled with each change the turn then makes to a file.

    cps = Checkpoints(workspace, store)
    await cps.begin(session_id, message_id)     # before the turn runs: its place only
    await around_tool(cps, "edit_file", {"path": "a.py", ...}, done=False)   # state before
    await around_tool(cps, "edit_file", {"path": "a.py", ...}, done=True)    # a step recorded
    seen = await cps.before_run()               # a sandboxed run starts (rooms saved)
    await cps.after_run(seen, changes)          # the watch named what the run changed
    await cps.end()

A checkpoint is a list of *steps*: one file going from one state (``pre``) to the next
(``post``), in the order the turn made them. A rewind undoes them newest first, each merged
three-way into what is there now, so a person's typing between and around the agent's
changes stays (:mod:`.restore`). Nothing is copied when a checkpoint opens; contents go to
the store's content-addressed blob folder (never the workspace), so a turn costs the bytes of
the files it changed, whatever the size of the workspace. The newest
``CheckpointConfig.keep_turns`` checkpoints of a session, at most ``keep_days`` old, are kept.

Where each state comes from:

- **File and notebook tools** name the path they change: its state is read just before the
  call and just after, as its room shows it, without following a link.
- **Sandboxed code** (``bash``, ``execute_code``, ``%%bash``, ``%%python``, and the
  subagents' calls, which run through the parent) is known only after the fact: the run's
  file watch names what it created, changed or deleted, and ``post`` is read from disk then.
  ``pre`` of a changed file is the last state this session recorded of it: a read, a
  change, or the copy made ahead when the watch started (:mod:`.prefetch`: the small,
  visible files of the watched folders, within ``prefetch_mb``). Just before each run these
  are brought up to date from the watch's events since the last run (a file a person saved
  meanwhile is read again; without an event watch, a stat of each). A file code changed that
  has no recorded ``pre`` (too big to copy ahead and never read, or hidden) makes the step
  *unknown*, and a rewind reports it and leaves the file alone rather than guess. A file the
  watch saw created (not renamed onto its path, which ``sed -i`` does) did not exist before.
- **External MCP tools** carry no path Think can trust, so each call runs inside the same
  watch as sandboxed code (``think_kernel.mcp.servers``): what a server changed in the
  workspace during the call is recorded as a run's changes are.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import stat
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..store.ids import new_id
from .blobs import GRACE, Blobs
from .config import CheckpointConfig
from .prefetch import copy_ahead
from .records import prune

log = logging.getLogger(__name__)

#: Files of the session whose state is remembered for sandboxed runs (most recent kept).
MAX_KNOWN = 2_000
#: Bytes of one file a checkpoint copies at most (a bigger file's step is unknown).
MAX_FILE_BYTES = 50 * 2**20
#: Tools that change the file named by their ``path`` argument, and those that read it.
CHANGING_TOOLS = frozenset(
    {
        "write_file",
        "edit_file",
        "delete_file",
        "insert_cell",
        "edit_cell",
        "delete_cell",
        "execute_cell",
        "revert",
    }
)
READING_TOOLS = frozenset({"read_file", "read_notebook"})
#: Seconds the first run waits for the copies made ahead (then it goes on without the rest).
PREFETCH_WAIT = 2.0
#: A remembered content's blob is marked in use again after this long, so that pruning,
#: which collects blobs no step names after :data:`~.blobs.GRACE`, leaves it.
TOUCH_AFTER = GRACE / 3


#: The tool call running in this context, ``(message id, call id)``: each step it makes names
#: it, so that the call's action-log row can undo exactly those (:mod:`.undo`). Set by
#: :meth:`~think_kernel.tools.base.ToolRegistry.call`; a sandboxed run inside a call is in
#: the call's context, so the run's steps name the call too.
CALL: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "think_call", default=None
)


class TooLarge(OSError):
    """A file over :data:`MAX_FILE_BYTES`: its state is not copied."""


@dataclass(frozen=True)
class State:
    """A file's state: absent (``blob`` None, ``exists`` False) or content in a blob."""

    exists: bool
    blob: str | None
    size: int = 0


ABSENT = State(False, None)


@dataclass
class _Known:
    state: State
    mtime_ns: int
    touched: float = field(default_factory=time.time)  # when its blob was last saved or used


class Checkpoints:
    """The kernel's recorder of checkpoints for one session (see the module doc)."""

    def __init__(
        self, workspace: Any, store: Any = None, config: CheckpointConfig | None = None
    ) -> None:
        self.workspace = workspace
        #: The session's store; the runtime sets it once open (nothing is recorded before).
        self.store = store
        self.config = config or CheckpointConfig()
        self._blobs: Blobs | None = None
        self.checkpoint: str | None = None
        self._pending: dict[str, State | None] = {}  # path -> state before a tool's call
        self._known: OrderedDict[str, _Known] = OrderedDict()
        self._watcher: Any = None  # the workspace watch the runs use, once started
        self._mark: Any = None  # its position when the remembered states were last current
        self._prefetch: asyncio.Future[None] | None = None

    @property
    def blobs(self) -> Blobs:
        """Where contents go: beside the store's database."""
        if self._blobs is None:
            self._blobs = Blobs.beside(self.store)
        return self._blobs

    # -- the turn ------------------------------------------------------------------------

    async def begin(self, session_id: str, message_id: str) -> str | None:
        """Open the checkpoint of a user message (a resumed run reopens the same one)."""
        await self.end()
        if self.store is None or not self.config.enabled:
            return None
        row = await self.store._one(
            "SELECT id FROM checkpoints WHERE message_id = ?", (message_id,)
        )
        if row is not None:
            self.checkpoint = str(row["id"])
            return self.checkpoint
        session = await self.store.get_session(session_id)
        cp = new_id("cp_")
        await self.store._write(
            "INSERT INTO checkpoints (id, session_id, message_id, branch_id, created_at)"
            " VALUES (?, ?, ?, ?, ?)",
            (cp, session_id, message_id, (session or {}).get("branch_id"), time.time()),
        )
        self.checkpoint = cp
        try:  # a turn at a time, so the cost is one indexed query when nothing is due
            cfg = self.config
            await prune(self.store, self.blobs, session_id, cfg.keep_turns, cfg.keep_days)
        except Exception:
            log.exception("could not prune old checkpoints")
        return cp

    async def end(self) -> None:
        """Close the open checkpoint."""
        cp, self.checkpoint = self.checkpoint, None
        self._pending.clear()
        if cp is not None and self.store is not None:
            await self.store._write(
                "UPDATE checkpoints SET ended_at = ? WHERE id = ?", (time.time(), cp)
            )

    # -- file and notebook tools ---------------------------------------------------------

    async def before_tool(self, path: str) -> None:
        """A tool is about to change ``path``: read its state."""
        rel = self._rel(path)
        if rel is None or self.checkpoint is None:
            return
        self._pending[rel] = await self._state(rel)

    async def after_tool(self, path: str) -> None:
        """The tool ended: record the step (if the file changed), remember the new state."""
        rel = self._rel(path)
        if rel is None:
            return
        asked = rel in self._pending
        pre = self._pending.pop(rel, None)
        post = await self._state(rel)
        if post is not None and post.exists:
            self._remember(rel, post)
        if asked and self.checkpoint is not None:
            await self._step(rel, pre, post)

    async def remember(self, path: str) -> None:
        """A tool read ``path``: keep its state for sandboxed runs that change it unseen."""
        rel = self._rel(path)
        if rel is None or self.store is None:
            return
        state = await self._state(rel)
        if state is not None and state.exists:
            self._remember(rel, state)

    # -- sandboxed runs ------------------------------------------------------------------

    def watching(self, watcher: Any) -> None:
        """The session's workspace watch started: copy the small files ahead (in the
        background) and keep what is remembered current from its events from now on."""
        self._watcher, self._mark = watcher, None
        if self._prefetch is None or self._prefetch.done():
            self._prefetch = asyncio.ensure_future(self._copy_ahead(watcher))

    async def prefetched(self) -> None:
        """Wait until the copies made ahead are done."""
        if self._prefetch is not None:
            await asyncio.wait({self._prefetch})

    async def _copy_ahead(self, watcher: Any) -> None:
        try:
            folders = watcher.folders()
            if not folders:  # a snapshot watch: a stat of each file before every run
                return
            # Marked first: a change made while the files are read is read again later.
            mark = await watcher.mark()
            # What was remembered before the watch started is brought up to date once.
            await self._refresh(list(self._known), by_stat=True)
            self._mark = mark
            cfg = self.config
            if self.store is None or not cfg.enabled or cfg.prefetch_mb <= 0:
                return
            found = await asyncio.to_thread(
                copy_ahead, self.workspace.fs, self.blobs, Path(self.workspace.root), folders,
                max_bytes=cfg.prefetch_mb << 20, max_file=cfg.prefetch_file_kb << 10,
                max_files=MAX_KNOWN // 2,
            )  # fmt: skip
            for rel, blob, size, mtime_ns in found:
                if rel not in self._known:  # a tool's state of it is as new or newer
                    self._known[rel] = _Known(State(True, blob, size), mtime_ns)
                    self._known.move_to_end(rel, last=False)  # the first to be forgotten
            log.debug("checkpoints: %d files copied ahead", len(found))
        except Exception:
            log.exception("could not copy the workspace's files ahead")

    async def before_run(self) -> set[str]:
        """Before a sandboxed run (after the rooms were saved): bring the remembered states
        up to date; return the files whose state is known now. With an event watch, a read
        per remembered file that changed since the last run; else a stat per remembered
        file and a read per changed one."""
        if self._prefetch is not None and not self._prefetch.done():
            await asyncio.wait({self._prefetch}, timeout=PREFETCH_WAIT)
        watcher, mark = self._watcher, self._mark
        if watcher is not None and mark is not None:
            self._mark = await watcher.mark()  # taken before reading the old one: no gap
            changes = await watcher.since(mark)
            if changes.incomplete:
                await self._refresh(list(self._known), by_stat=True)
            else:
                await self._refresh([p for p in changes.paths() if p in self._known])
        else:
            await self._refresh(list(self._known), by_stat=True)
        await self._keep_blobs()
        return set(self._known)

    async def _refresh(self, paths: list[str], by_stat: bool = False) -> None:
        """Read these remembered files again (``by_stat``: only those whose size or mtime
        differ); forget those that are gone or no longer regular files."""
        items = [(rel, self._known[rel]) for rel in paths if rel in self._known]
        if items:
            found = await asyncio.to_thread(self._read_again, items, by_stat)
            self._apply(found)

    def _read_again(
        self, items: list[tuple[str, _Known]], by_stat: bool
    ) -> dict[str, _Known | None]:
        fs = self.workspace.fs
        out: dict[str, _Known | None] = {}
        for rel, k in items:
            try:
                st = fs.lstat(rel)
                if st is None or not stat.S_ISREG(st.st_mode):
                    out[rel] = None
                elif not by_stat or (st.st_size, st.st_mtime_ns) != (k.state.size, k.mtime_ns):
                    data = _disk(fs, rel)
                    blob = self.blobs.save_sync(data)
                    out[rel] = _Known(State(True, blob, len(data)), st.st_mtime_ns)
            except OSError:
                out[rel] = None
        return out

    def _apply(self, found: dict[str, _Known | None]) -> None:
        for rel, k in found.items():
            if k is None:
                self._known.pop(rel, None)
            elif rel in self._known:
                self._known[rel] = k

    async def _keep_blobs(self) -> None:
        """Mark the remembered contents' blobs in use again before pruning could collect
        them; one already collected is saved again from the file (current by now)."""
        old = time.time() - TOUCH_AFTER
        items = [(rel, k) for rel, k in self._known.items() if k.touched < old]
        if items:
            self._apply(await asyncio.to_thread(self._touch, items))

    def _touch(self, items: list[tuple[str, _Known]]) -> dict[str, _Known | None]:
        gone = []
        for rel, k in items:
            if k.state.blob is not None and self.blobs.touch(k.state.blob):
                k.touched = time.time()
            else:
                gone.append((rel, k))
        return self._read_again(gone, by_stat=False) if gone else {}

    async def after_run(self, fresh: set[str], changes: Any) -> None:
        """A sandboxed run ended: record a step for each file it created, changed or
        deleted (see the module doc for where ``pre`` comes from)."""
        if self.checkpoint is None or self.store is None:
            return
        replaced = set(changes.replaced)
        for rel in [*changes.created, *changes.modified, *changes.deleted]:
            new = rel in changes.created and rel not in replaced and rel not in fresh
            k = self._known.get(rel) if rel in fresh else None
            pre: State | None = ABSENT if new else (k.state if k is not None else None)
            try:
                post = await self._disk_state(rel)
            except OSError:
                post = None
            await self._step(rel, pre, post)
            if post is not None and post.exists:
                self._remember(rel, post)
            else:
                self._known.pop(rel, None)

    # -- helpers ---------------------------------------------------------------------------

    def _rel(self, path: str) -> str | None:
        try:
            return str(self.workspace.rel(path))
        except Exception:  # a path the tool itself refuses
            return None

    async def _state(self, rel: str) -> State | None:
        """The file as its room shows it (None: it cannot be copied: a link, too big...)."""
        try:
            st = await asyncio.to_thread(self.workspace.fs.lstat, rel)
            if st is not None and st.st_size > MAX_FILE_BYTES:
                raise TooLarge(rel)
            data = await self.workspace.snapshot(rel)
        except Exception as e:
            log.info("checkpoint: %s not copied (%s)", rel, e)
            return None
        if data is None:
            return ABSENT
        return State(True, await self.blobs.save(data), len(data))

    async def _disk_state(self, rel: str) -> State:
        st = await asyncio.to_thread(self.workspace.fs.lstat, rel)
        if st is None:
            return ABSENT
        data = await asyncio.to_thread(_disk, self.workspace.fs, rel)
        return State(True, await self.blobs.save(data), len(data))

    def _remember(self, rel: str, state: State) -> None:
        try:
            st = self.workspace.fs.lstat(rel)
        except OSError:
            return
        if st is None or not stat.S_ISREG(st.st_mode):
            return
        # The size is the file's on disk: a room's text can differ from it (a notebook's
        # JSON layout), and a mismatch only costs one read before the next run.
        self._known[rel] = _Known(State(True, state.blob, st.st_size), st.st_mtime_ns)
        self._known.move_to_end(rel)
        while len(self._known) > MAX_KNOWN:
            self._known.popitem(last=False)

    async def _step(self, rel: str, pre: State | None, post: State | None) -> None:
        """Record one change of ``rel`` (None: that state could not be read: unknown)."""
        if pre is not None and post is not None and pre == post:
            return  # the call changed nothing
        known = pre is not None and post is not None
        pre = pre or ABSENT
        post = post or ABSENT
        message, call = CALL.get() or (None, None)
        await self.store._write(
            "INSERT INTO checkpoint_steps (checkpoint_id, path, known, pre_exists, pre_blob,"
            " post_exists, post_blob, size, created_at, call_message, call_id)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                self.checkpoint,
                rel,
                int(known),
                int(pre.exists),
                pre.blob,
                int(post.exists),
                post.blob,
                pre.size + post.size,
                time.time(),
                message or None,
                call or None,
            ),
        )


async def around_tool(cps: Checkpoints, name: str, args: dict[str, Any], done: bool) -> None:
    """Called by the tool registry before (``done`` False) and after each call."""
    path = args.get("path")
    if not isinstance(path, str):
        return
    if name in CHANGING_TOOLS:
        await (cps.after_tool(path) if done else cps.before_tool(path))
    elif name in READING_TOOLS and done:
        await cps.remember(path)


def _disk(fs: Any, rel: str) -> bytes:
    """A regular file's bytes from disk, no link followed."""
    with fs.open_read(rel, follow=False) as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise TooLarge(rel)
    return bytes(data)
