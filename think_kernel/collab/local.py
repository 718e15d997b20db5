"""Local files as Yjs documents: the standalone mode's stand-in for the collaboration rooms.

    docs = LocalDocuments(workspace_root, YStore(store_dir(workspace_root) / "ydocs.db"))
    cell_id, version = await docs.edit(
        "nb.ipynb", lambda ynb: ydocs.insert_cell(ynb, 0, "1 + 1"), action_id="act_1",
        summary="insert cell", create=True,
    )

Each file the agent edits is loaded into a ``YNotebook`` / ``YUnicode`` whose history is the
:class:`~think_kernel.collab.ystore.YStore` update log. An edit runs the same granular
operations as the server (:mod:`think_kernel.collab.ydocs`) in one transaction whose origin is
``Think:<action id>``, is appended to the log as one version, and is written back to disk
atomically (notebooks validated with nbformat first; an invalid one is refused, not written).

A change made on disk by someone else (a human's editor, ``git checkout``) is noticed by its
stat and merged as its own version (origin ``disk``): it is diffed against the state last
written to disk on a fork of the document, so it merges with agent changes not yet on disk
(outputs of a running cell) instead of replacing them.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..tools.base import ToolError
from ..tools.workspace import LocalWorkspace, PathError, os_error
from .ystore import YStore

if TYPE_CHECKING:
    from jupyter_ydoc import YNotebook, YUnicode
    from pycrdt import Doc

# jupyter-ydoc and pycrdt (and .ydocs, built on them) are imported where documents are made:
# a runtime builds this store at start, long before (if ever) a file is edited, and their
# import is a third of a runtime's (on the first %%think's path).

T = TypeVar("T")
Stat = tuple[int, int, int]
DISK_ORIGIN = "disk"


def is_notebook(path: str) -> bool:
    """Notebooks are ``.ipynb`` files; everything else is text."""
    return path.endswith(".ipynb")


def _stat_of(st: os.stat_result | None) -> Stat | None:
    return None if st is None else (st.st_mtime_ns, st.st_size, st.st_ino)


def parse_notebook(text: str, path: str) -> dict[str, Any]:
    """A notebook file as nbformat 4.5 JSON (cell ids added if it is older)."""
    import nbformat  # lazy: its import (jsonschema) is slow

    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as e:
        raise ToolError(f"{path} is not a valid notebook: {e}", "INVALID_NOTEBOOK") from None
    if nb.get("nbformat_minor", 0) < 5:
        # ids are how the tools name cells; nbformat 4.4 files have none
        nb["nbformat_minor"] = 5
        for cell in nb.cells:
            cell.setdefault("id", nbformat.v4.new_code_cell().id)
    return dict(json.loads(json.dumps(nb)))


def set_notebook(ynb: YNotebook, nb: dict[str, Any]) -> None:
    """Make ``ynb`` equal ``nb`` granularly (jupyter-ydoc matches cells by id, diffs sources).

    ``YNotebook.set`` turns an empty cell list into one empty cell; a notebook the agent
    emptied stays empty.
    """
    ynb.set(nb)
    if not nb.get("cells"):
        ynb.ycells.clear()


def serialise(doc: YNotebook | YUnicode) -> str:
    """The file text of a document; a notebook must validate or ToolError is raised."""
    from jupyter_ydoc import YUnicode

    if isinstance(doc, YUnicode):
        return doc.get()
    import nbformat  # lazy: its import (jsonschema) is slow; only notebooks need it

    nb = nbformat.from_dict(doc.get())
    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as e:
        raise ToolError(f"the edit would make an invalid notebook: {e.message}") from None
    return str(nbformat.writes(nb)) + "\n"


def content_of(doc: YNotebook | YUnicode) -> str:
    """A document's content as text (notebooks as JSON) for versions and file reads."""
    from jupyter_ydoc import YUnicode

    if isinstance(doc, YUnicode):
        return doc.get()
    return json.dumps(doc.get(), indent=1)


@dataclass
class _Entry:
    """One document in memory."""

    path: str
    full: Path
    doc: YNotebook | YUnicode
    version: int = -1  # last version in the store that this doc holds
    disk_version: int = -1  # version whose state is what the file on disk holds
    stat: Stat | None = None  # the file as we last read or wrote it
    pending: list[bytes] = field(default_factory=list)
    pending_meta: tuple[str, str, str] = ("", "", "")  # origin, action id, summary
    replaying: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class LocalDocuments:
    """Yjs documents of local files, their version log and their disk copies."""

    def __init__(self, root: str | os.PathLike[str], store: YStore) -> None:
        self.workspace = LocalWorkspace(root)
        self.root = self.workspace.root
        self.store = store
        self._entries: dict[str, _Entry] = {}

    def rel(self, path: str) -> str:
        """The normalised workspace-relative path (PathError if it leaves the workspace)."""
        return self.workspace.relative(self.workspace.resolve(path))

    # Disk access goes through the workspace's SafeRoot (never through a planted link), in a tool
    # call with the calling session's rights (``run_io``): what it checked is what is opened.

    def _disk_stat(self, rel: str) -> os.stat_result | None:
        try:
            return self.workspace.fs.lstat(rel)
        except OSError as e:
            raise os_error(rel, e) from None

    def _read(self, rel: str) -> tuple[str, Stat | None]:
        """The file's text (strict UTF-8, bounded size) and its stat."""
        try:
            st = self.workspace.fs.lstat(rel)
            data = self.workspace.read_bytes_sync(rel)
        except OSError as e:
            if getattr(e, "errno", None) == errno.EFBIG:
                raise ToolError(self.workspace.too_large(rel), "TOO_LARGE") from None
            raise os_error(rel, e) from None
        return self.workspace.decode(rel, data), _stat_of(st)

    # ------------------------------------------------------------------ loading

    def _new_entry(self, rel: str) -> _Entry:
        from jupyter_ydoc import YNotebook, YUnicode

        doc: YNotebook | YUnicode = YNotebook() if is_notebook(rel) else YUnicode()
        entry = _Entry(rel, self.workspace.resolve(rel), doc)

        def on_update(event: Any) -> None:
            if not entry.replaying:
                entry.pending.append(event.update)

        doc.ydoc.observe(on_update)
        return entry

    def _apply_stored(self, entry: _Entry, updates: list[tuple[int, bytes]]) -> None:
        entry.replaying = True
        try:
            for version, data in updates:
                entry.doc.ydoc.apply_update(data)
                entry.version = version
        finally:
            entry.replaying = False

    async def _entry(self, rel: str) -> _Entry:
        """The document of ``rel`` with the log's latest state; call with its lock held."""
        entry = self._entries.get(rel)
        if entry is None:
            entry = self._entries[rel] = self._new_entry(rel)
        # Another process sharing the store may have written since (or this is the first load).
        if entry.version < 0:
            # First load: the latest snapshot and its tail, not the whole log.
            last = await asyncio.to_thread(self.store.last_version, rel)
            if last is not None:
                state = await asyncio.to_thread(self.store.state, rel, last)
                self._apply_stored(entry, [(last, state)])
        newer = await asyncio.to_thread(self.store.updates_since, rel, entry.version)
        if newer:
            self._apply_stored(entry, newer)
        return entry

    def forget(self, rel: str) -> None:
        """Drop the in-memory document of ``rel`` (it reloads from the log if used again)."""
        self._entries.pop(rel, None)

    def lock(self, path: str) -> asyncio.Lock:
        """The lock that serialises operations on one document."""
        rel = self.rel(path)
        if rel not in self._entries:
            self._entries[rel] = self._new_entry(rel)
        return self._entries[rel].lock

    async def sync(self, path: str, create: bool = False) -> _Entry:
        """Load ``path`` and merge changes made on disk since; call with its lock held."""
        rel = self.rel(path)
        entry = await self._entry(rel)
        st = await self.workspace.run_io(rel, lambda: self._disk_stat(rel), "read")
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise PathError(f"{path!r} is a directory")
        disk = _stat_of(st)
        if disk is None:
            if not create:
                raise PathError(f"{path!r} does not exist")
            # A new (or deleted) file: the edit starts from an empty document.
            entry.stat = None
            return entry
        if disk == entry.stat:
            return entry
        text, disk = await self.workspace.run_io(rel, lambda: self._read(rel), "read")
        if entry.pending:
            await self._record(entry)
        if entry.version >= 0 and text == serialise_or_none(entry.doc):
            # Written by another process from this very state (pulled above).
            entry.stat, entry.disk_version = disk, entry.version
            return entry
        target: Any = parse_notebook(text, rel) if is_notebook(rel) else text
        self._merge_disk(entry, target)
        if entry.pending:
            origin = DISK_ORIGIN if entry.version >= 0 else "initial"
            entry.pending_meta = (origin, "", "changed on disk" if entry.version >= 0 else "")
            await self._record(entry)
        entry.stat, entry.disk_version = disk, entry.version
        return entry

    def _merge_disk(self, entry: _Entry, target: Any) -> None:
        """Apply the change from the state last on disk to ``target`` onto the live document."""
        from jupyter_ydoc import YNotebook, YUnicode
        from pycrdt import Doc, Text

        from . import ydocs

        if entry.disk_version < 0:
            base: Doc[Any] = Doc()
            if entry.version >= 0:
                base.apply_update(entry.doc.ydoc.get_update())
        else:
            base = Doc()
            base.apply_update(self.store.state(entry.path, entry.disk_version))
        fork = YNotebook(base) if is_notebook(entry.path) else YUnicode(base)
        before = base.get_state()
        with base.transaction(origin=DISK_ORIGIN):
            if isinstance(fork, YNotebook):
                set_notebook(fork, target)
            else:
                ydocs.apply_text(base.get("source", type=Text), target)
        update = base.get_update(before)
        with entry.doc.ydoc.transaction(origin=DISK_ORIGIN):
            entry.doc.ydoc.apply_update(update)

    # ------------------------------------------------------------------ writing

    async def _record(self, entry: _Entry) -> int:
        """Append the pending updates to the log as one version."""
        from pycrdt import merge_updates

        from . import ydocs

        if not entry.pending:
            return entry.version
        data = entry.pending[0] if len(entry.pending) == 1 else merge_updates(*entry.pending)
        origin, action_id, summary = entry.pending_meta
        entry.pending = []
        entry.version = await asyncio.to_thread(
            self.store.append,
            entry.path,
            data,
            origin=origin or ydocs.AGENT_NAME,
            action_id=action_id,
            summary=summary,
        )
        return entry.version

    async def commit(self, entry: _Entry) -> int:
        """Validate, record a version and write the file; an invalid notebook is refused."""
        try:
            data = serialise(entry.doc).encode("utf-8")
        except (ToolError, UnicodeEncodeError) as e:
            # Forget the refused change: the document reloads from the log next time.
            self._entries.pop(entry.path, None)
            if isinstance(e, UnicodeEncodeError):
                raise ToolError("the content is not valid unicode (a lone surrogate)") from None
            raise
        version = await self._record(entry)

        def write() -> Stat | None:
            fs = self.workspace.fs
            try:
                fs.write_bytes(entry.path, data)
                return _stat_of(fs.lstat(entry.path))
            except OSError as e:
                raise os_error(entry.path, e) from None

        entry.stat = await self.workspace.run_io(entry.path, write, "write")
        entry.disk_version = version
        return version

    async def edit(
        self,
        path: str,
        fn: Callable[[Any], T],
        *,
        action_id: str = "",
        summary: str = "",
        create: bool = False,
        commit: bool = True,
    ) -> tuple[T, int]:
        """Run ``fn(doc)`` in one attributed transaction; record it and write the file.

        With ``commit=False`` the change stays pending (merged into the next version of the same
        action; used for streamed cell outputs).
        """
        from . import ydocs

        async with self.lock(path):
            entry = await self.sync(path, create=create)
            origin = ydocs.origin_for(action_id)
            meta = (origin, action_id, summary)
            if entry.pending and entry.pending_meta != meta:
                await self._record(entry)
            created = entry.stat is None
            with entry.doc.ydoc.transaction(origin=origin):
                if created:
                    self._init_new(entry)
                result = fn(entry.doc)
            entry.pending_meta = meta
            version = await self.commit(entry) if commit or created else entry.version
            return result, version

    def _init_new(self, entry: _Entry) -> None:
        from jupyter_ydoc import YNotebook

        from . import ydocs

        if isinstance(entry.doc, YNotebook):
            set_notebook(entry.doc, ydocs.new_notebook_json())
        else:
            entry.doc.set("")

    async def flush(self, path: str) -> int:
        """Commit pending changes of ``path`` (if any)."""
        async with self.lock(path):
            entry = await self.sync(path)
            if entry.pending:
                return await self.commit(entry)
            return entry.version

    async def read(self, path: str) -> YNotebook | YUnicode:
        """The current document of ``path`` (merged with the disk); do not edit it."""
        async with self.lock(path):
            return (await self.sync(path)).doc

    # ------------------------------------------------------------------ history

    def replay(self, path: str, version: int) -> YNotebook | YUnicode:
        """A detached document as it was at ``version`` (KeyError if there is none)."""
        from jupyter_ydoc import YNotebook, YUnicode
        from pycrdt import Doc

        rel = self.rel(path)
        doc: Doc[Any] = Doc()
        doc.apply_update(self.store.state(rel, version))
        return YNotebook(doc) if is_notebook(rel) else YUnicode(doc)

    def versions(self, path: str) -> list[dict[str, Any]]:
        """Recorded versions of ``path``, oldest first."""
        return [v.to_dict() for v in self.store.versions(self.rel(path))]

    async def revert(self, path: str, version: int, action_id: str = "") -> dict[str, Any]:
        """Bring ``path`` back to ``version`` as a new attributed version."""
        from jupyter_ydoc import YNotebook
        from pycrdt import Text

        from . import ydocs

        try:
            old = await asyncio.to_thread(self.replay, path, version)
        except KeyError as e:
            raise ToolError(str(e.args[0]), "NO_SUCH_VERSION") from None
        target: Any = old.get()

        def apply(doc: Any) -> int:
            if isinstance(doc, YNotebook):
                set_notebook(doc, target)
                return len(target.get("cells", []))
            return ydocs.apply_text(doc.ydoc.get("source", type=Text), target)

        ops, new = await self.edit(
            path, apply, action_id=action_id, summary=f"revert to {version}", create=True
        )
        return {"ops": ops, "version": new}

    async def delete(self, path: str, action_id: str = "") -> int:
        """Delete the file; its last state stays in the log so the deletion can be reverted."""
        from jupyter_ydoc import YNotebook

        from . import ydocs

        async with self.lock(path):
            entry = await self.sync(path)
            if entry.pending:
                await self._record(entry)
            origin = ydocs.origin_for(action_id)
            with entry.doc.ydoc.transaction(origin=origin):
                if isinstance(entry.doc, YNotebook):
                    entry.doc.ycells.clear()
                else:
                    entry.doc.set("")
            entry.pending_meta = (origin, action_id, "deleted")
            version = await self._record(entry)
            try:
                await self.workspace.run_io(
                    entry.path, lambda: self.workspace.fs.unlink(entry.path), "delete"
                )
            except OSError as e:
                raise os_error(entry.path, e) from None
            entry.stat, entry.disk_version = None, version
            return version


def serialise_or_none(doc: YNotebook | YUnicode) -> str | None:
    """Like :func:`serialise`, or None when the document is not a valid notebook."""
    try:
        return serialise(doc)
    except ToolError:
        return None
