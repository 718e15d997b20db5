"""The agent edits files and notebooks through the collaboration rooms, server side.

    docs = DocumentService(serverapp, history=VersionLog(store_dir / "history.db"))
    await docs.write_text("a.py", "print(1)\\n", action_id="act_1")
    cell_id = (await docs.insert_cell("nb.ipynb", 0, "1 + 1", action_id="act_2"))["cell_id"]

Every operation resolves the room's document afresh through the public API
``settings["jupyter_server_ydoc"].get_document(..., copy=False, create=True)``: a document kept
across calls goes stale once its room is cleaned up (60 s after the last client leaves, or
after the agent last used a room no client joined: :meth:`RoomFiles.used`) and edits to it
would be swallowed. Between that await and the edit there is no other await, so the
edit lands in the live room in one transaction whose origin is ``Think:<action id>``; the room
then broadcasts it, writes it to its ystore and autosaves it. Nothing is written to disk behind
a room: a file that does not exist yet is created empty through the contents manager (no room
can be open on it) and then filled through its room.

RPC methods (:func:`jupyter_ext.collab.docrpc.register_document_rpcs`), params -> result, all JSON:

- ``doc.read`` {path} -> {content, kind}; ``doc.write`` {path, content, base?, action_id?}
  -> {ops, created, version}; ``doc.edit`` {path, old, new, replace_all?, action_id?}
  -> {ops, count, version}; ``doc.delete`` {path, action_id?} -> {}
- ``doc.read_notebook`` {path} -> notebook view (cells with ids, sources, outputs summarised)
- ``doc.insert_cell`` {path, index, source, cell_type?, action_id?} -> {cell_id, index, version}
- ``doc.edit_cell`` {path, cell_id, source, base?, action_id?} -> {ops, version}
- ``doc.delete_cell`` {path, cell_id, action_id?} -> {version}
- ``doc.execute_cell`` {path, cell_id, timeout?, wait?, action_id?} -> execution (see
  :mod:`jupyter_ext.collab.execution`); ``doc.execution`` {execution_id, since?, wait?};
  ``doc.interrupt`` {execution_id}
- ``doc.versions`` {path} -> {versions: [...]}; ``doc.revert`` {path, version, action_id?}
  -> {ops, version}

``base`` is the text the agent's edit was computed from (what it last read): what others
changed since is merged when it touches other lines; a change to the same lines is refused
(``code: "CONFLICT"``, with the ``current`` text) so the model reads again
(:func:`think_kernel.collab.merge.merge_edit`). ``quiet`` (seconds) asks the agent's edit to
wait while a person types in that cell or on those lines: the answer is then ``{"busy":
"waiting for you to finish typing in cell 3 of a.ipynb", "retry_after": s}`` and nothing is
changed (:mod:`jupyter_ext.collab.activity`).

Around sandboxed runs (:mod:`jupyter_ext.collab.roomfiles`): ``doc.flush`` {path, hold?} -> {saved,
lease} saves every dirty room under the folder ``path`` (and holds autosaves there for
``hold`` seconds); ``doc.sync`` {paths, lease?} -> {merged} merges what the run changed on disk
into the open rooms and releases the lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import posixpath
import weakref
from collections.abc import Callable
from typing import Any

from jupyter_server.utils import ensure_async
from jupyter_ydoc import YNotebook, YUnicode
from tornado.web import HTTPError

from think_kernel.collab import ydocs
from think_kernel.collab.history import VersionLog
from think_kernel.collab.merge import MergeConflict, changed_lines, merge_edit
from think_kernel.tools.workspace import MAX_EDIT_BYTES

from .activity import RoomActivity
from .doccheck import (
    UNLOADABLE,
    DocumentError,
    check_loadable,
    check_path,
    conflict,
    kind_of,
    source_of,
)
from .roomfiles import RoomFiles


class DocumentService:
    """Reads and edits documents through the live collaboration rooms."""

    def __init__(
        self,
        serverapp: Any,
        history: VersionLog,
        log: Any = None,
        files: RoomFiles | None = None,
        max_bytes: int = MAX_EDIT_BYTES,
    ) -> None:
        self.serverapp = serverapp
        self.history = history
        self.log = log or serverapp.log
        self.max_bytes = max_bytes  # larger files are never loaded into a room
        self._loadable: dict[str, tuple[int, int, int]] = {}
        self.files = files
        self._locks: dict[str, asyncio.Lock] = {}
        self._activity: weakref.WeakKeyDictionary[Any, RoomActivity] = weakref.WeakKeyDictionary()

    def activity_for(self, path: str) -> RoomActivity | None:
        """The activity tracker of an open room, by path (None if the room is not open)."""
        for doc in list(self._activity):
            if getattr(doc, "path", None) == path:
                return self._activity[doc]
        if self.files is not None:
            for _, room, loader in self.files.rooms():
                if loader.path == path:
                    return self.files.tracker(room.ydoc)
        return None

    def activity(self, doc: Any) -> RoomActivity:
        """What people do in this room lately (tracked since the room opened, when the room
        files are installed; else since the agent's first access)."""
        found = self.files.tracker(doc.ydoc) if self.files is not None else None
        if found is None:
            found = self._activity.get(doc)
        if found is None:
            found = self._activity[doc] = RoomActivity(
                doc.ydoc, getattr(doc, "awareness", None), isinstance(doc, YNotebook)
            )
        return found

    # ------------------------------------------------------------------ rooms

    @property
    def _settings(self) -> dict[str, Any]:
        return self.serverapp.web_app.settings

    async def _exists(self, path: str) -> bool:
        cm = self.serverapp.contents_manager
        return bool(await ensure_async(cm.file_exists(path)))

    async def document(self, path: str, create_file: bool = False) -> YUnicode | YNotebook:
        """The live shared document of ``path`` (its room is created if needed)."""
        path = check_path(path)
        if not await self._exists(path):
            if not create_file:
                raise DocumentError(f"{path!r} does not exist")
            await self._create_empty(path)
        ext = self._settings.get("jupyter_server_ydoc")
        if ext is None:
            raise DocumentError("jupyter-collaboration (jupyter_server_ydoc) is not enabled")
        if self.files is not None and self.files.mapping is None:
            self.files.install()  # before the room (and its file loader) is made
        notebook = kind_of(path) == "notebook"
        await check_loadable(self.serverapp.root_dir, path, self.max_bytes, self._loadable)
        try:
            doc = await ext.get_document(
                path=path,
                content_type="notebook" if notebook else "file",
                file_format="json" if notebook else "text",
                copy=False,
                create=True,
            )
        except HTTPError as e:  # the contents manager refused to load it
            reason = str(e.log_message or e)
            raise DocumentError(
                reason, "NOT_UTF8" if "UTF-8" in reason else "DOCUMENT_ERROR"
            ) from e
        if doc is None:
            raise DocumentError(f"no collaboration room for {path!r}")
        self.activity(doc)
        if self.files is not None:
            self.files.used(doc.ydoc)  # closed once idle if no tab joins it
        return doc

    async def _create_empty(self, path: str) -> None:
        # No room can be open on a file that does not exist, so this is not a write behind one.
        cm = self.serverapp.contents_manager
        parent = posixpath.dirname(path)
        if parent and not await ensure_async(cm.dir_exists(parent)):
            parts = parent.split("/")
            for i in range(1, len(parts) + 1):
                sub = "/".join(parts[:i])
                if not await ensure_async(cm.dir_exists(sub)):
                    await ensure_async(cm.save({"type": "directory"}, sub))
        if kind_of(path) == "notebook":
            model = {"type": "notebook", "format": "json", "content": ydocs.new_notebook_json()}
        else:
            model = {"type": "file", "format": "text", "content": ""}
        await ensure_async(cm.save(model, path))

    def _show(self, doc: Any, path: str, action: str, cell_id: str = "") -> None:
        """Show the agent as a collaborator in this room (name, colour, what it is doing)."""
        awareness = getattr(doc, "awareness", None)
        if awareness is None:
            return
        state = {
            "user": ydocs.THINK_USER,
            "think": {"path": path, "action": action, "cell_id": cell_id},
        }
        if awareness.get_local_state() != state:
            awareness.set_local_state(state)

    def _lock(self, path: str) -> asyncio.Lock:
        return self._locks.setdefault(path, asyncio.Lock())

    def _snapshot(self, doc: Any) -> str:
        if isinstance(doc, YNotebook):
            return json.dumps(doc.get(), sort_keys=True)
        return str(doc.get())

    def _record(self, path: str, doc: Any, origin: str, action_id: str, summary: str) -> int:
        return self.history.record(
            path, self._snapshot(doc), origin=origin, action_id=action_id, summary=summary
        )

    def _remember_initial(self, path: str, doc: Any) -> None:
        if not self.history.has(path):
            self.history.record(path, self._snapshot(doc), origin="initial", summary="before")

    # ------------------------------------------------------------------ text files

    async def read_text(self, path: str) -> dict[str, Any]:
        """The current text of a file (a notebook reads as its JSON)."""
        doc = await self.document(path)
        if isinstance(doc, YNotebook):
            return {"content": json.dumps(doc.get(), indent=1), "kind": "notebook"}
        return {"content": doc.get(), "kind": "file"}

    async def write_text(
        self,
        path: str,
        content: str,
        base: str | None = None,
        action_id: str = "",
        quiet: float = 0.0,
    ) -> dict[str, Any]:
        """Make a file's text ``content`` by minimal edits, merged with others' since ``base``
        (a conflict is refused); with ``quiet``, wait while a person types on those lines."""
        path = check_path(path)
        async with self._lock(path):
            created = not await self._exists(path)
            doc = await self.document(path, create_file=True)
            if isinstance(doc, YNotebook):
                try:
                    target_nb = json.loads(content)
                except json.JSONDecodeError as e:
                    raise DocumentError(f"{path} is a notebook; content is not JSON: {e}") from e
                return await self._set_notebook(path, doc, target_nb, action_id, "write")
            text = source_of(doc)
            current = str(text)
            if quiet > 0:
                # First wait for the person to finish typing there; then merge with it.
                span = changed_lines(current if base is None else base, content)
                hit = span and self.activity(doc).busy(quiet, lines=span)
                if hit:
                    return {"busy": f"{hit.detail} of {path}", "retry_after": hit.quiet_in}
            try:
                target = content if base is None else merge_edit(base, content, current)
            except MergeConflict as e:
                raise conflict(path, e, current) from None
            self._remember_initial(path, doc)
            self._show(doc, path, "write")
            origin = ydocs.origin_for(action_id)
            # No await since `current` was read: the edit lands on exactly that text.
            with doc.ydoc.transaction(origin=origin):
                ops = ydocs.apply_text(text, target)
            version = self._record(path, doc, origin, action_id, f"write {ops} ops")
            return {"ops": ops, "created": created, "version": version, "content": target}

    async def edit_text(
        self, path: str, old: str, new: str, replace_all: bool = False, action_id: str = ""
    ) -> dict[str, Any]:
        """Replace ``old`` by ``new`` in the current text, atomically in the room."""
        path = check_path(path)
        async with self._lock(path):
            doc = await self.document(path)
            if isinstance(doc, YNotebook):
                raise DocumentError(f"{path} is a notebook; use edit_cell")
            current = doc.get()
            count = current.count(old) if old else 0
            if count == 0:
                raise DocumentError(f"old text not found in {path}")
            if count > 1 and not replace_all:
                raise DocumentError(
                    f"old text occurs {count} times in {path}; add context or set replace_all"
                )
            self._remember_initial(path, doc)
            self._show(doc, path, "edit")
            origin = ydocs.origin_for(action_id)
            target = current.replace(old, new) if replace_all else current.replace(old, new, 1)
            with doc.ydoc.transaction(origin=origin):
                ops = ydocs.apply_text(source_of(doc), target)
            version = self._record(path, doc, origin, action_id, f"edit {count}x")
            return {"ops": ops, "count": count if replace_all else 1, "version": version}

    async def delete(self, path: str, action_id: str = "") -> dict[str, Any]:
        """Delete a file through the contents manager (as the file browser does)."""
        path = check_path(path)
        async with self._lock(path):
            if not await self._exists(path):
                raise DocumentError(f"{path!r} does not exist")
            # Keep the last state so that the deletion can be reverted.
            try:
                doc = await self.document(path)
            except DocumentError as e:
                if e.code not in UNLOADABLE:
                    raise
            else:  # a file no room can hold is deleted without a version
                self._remember_initial(path, doc)
                self._record(path, doc, ydocs.origin_for(action_id), action_id, "deleted")
            loader = self.files.loader_at(path) if self.files is not None else None
            # No autosave of its room between the deletion and a save already under way.
            async with loader.saves() if loader is not None else contextlib.nullcontext():
                await ensure_async(self.serverapp.contents_manager.delete(path))
            return {}

    # ------------------------------------------------------------------ notebooks

    async def _notebook(self, path: str, create: bool = False) -> YNotebook:
        if kind_of(path) != "notebook":
            raise DocumentError(f"{path!r} is not a notebook (.ipynb)")
        doc = await self.document(path, create_file=create)
        assert isinstance(doc, YNotebook)
        return doc

    async def read_notebook(self, path: str) -> dict[str, Any]:
        """Cells with ids, sources and summarised outputs."""
        doc = await self._notebook(check_path(path))
        return ydocs.notebook_view(doc.get())

    async def insert_cell(
        self, path: str, index: int, source: str, cell_type: str = "code", action_id: str = ""
    ) -> dict[str, Any]:
        """Insert a new cell (the notebook is created if missing); return its id."""
        path = check_path(path)
        async with self._lock(path):
            doc = await self._notebook(path, create=True)
            self._remember_initial(path, doc)
            origin = ydocs.origin_for(action_id)
            try:
                with doc.ydoc.transaction(origin=origin):
                    cell_id = ydocs.insert_cell(doc, index, source, cell_type)
            except ValueError as e:
                raise DocumentError(str(e)) from e
            self._show(doc, path, "insert_cell", cell_id)
            version = self._record(path, doc, origin, action_id, f"insert cell {cell_id}")
            return {
                "cell_id": cell_id,
                "index": ydocs.find_cell(doc, cell_id),
                "version": version,
            }

    async def edit_cell(
        self,
        path: str,
        cell_id: str,
        source: str,
        base: str | None = None,
        action_id: str = "",
        quiet: float = 0.0,
    ) -> dict[str, Any]:
        """Set a cell's source by a granular diff, merged with others' edits since ``base``
        (a conflict is refused); with ``quiet``, wait while a person types in the cell."""
        path = check_path(path)
        async with self._lock(path):
            doc = await self._notebook(path)
            try:
                text = doc.ycells[ydocs.find_cell(doc, cell_id)]["source"]
            except KeyError as e:
                raise DocumentError(str(e.args[0])) from e
            current = str(text)
            if quiet > 0 and source != current:
                # First wait for the person to finish typing there; then merge with it.
                hit = self.activity(doc).busy(quiet, cell_id=cell_id)
                if hit:
                    return {"busy": f"{hit.detail} of {path}", "retry_after": hit.quiet_in}
            try:
                target = source if base is None else merge_edit(base, source, current)
            except MergeConflict as e:
                raise conflict(f"cell {cell_id} of {path}", e, current) from None
            self._remember_initial(path, doc)
            self._show(doc, path, "edit_cell", cell_id)
            origin = ydocs.origin_for(action_id)
            with doc.ydoc.transaction(origin=origin):
                ops = ydocs.apply_text(text, target)
            version = self._record(path, doc, origin, action_id, f"edit cell {cell_id}")
            return {"ops": ops, "version": version, "source": target}

    async def delete_cell(self, path: str, cell_id: str, action_id: str = "") -> dict[str, Any]:
        """Delete a cell by id."""
        path = check_path(path)
        async with self._lock(path):
            doc = await self._notebook(path)
            self._remember_initial(path, doc)
            origin = ydocs.origin_for(action_id)
            try:
                with doc.ydoc.transaction(origin=origin):
                    ydocs.delete_cell(doc, cell_id)
            except KeyError as e:
                raise DocumentError(str(e.args[0])) from e
            self._show(doc, path, "delete_cell")
            version = self._record(path, doc, origin, action_id, f"delete cell {cell_id}")
            return {"version": version}

    async def update_cell(self, path: str, action_id: str, fn: Callable[[YNotebook], None]) -> None:
        """Run ``fn`` on the live notebook in one attributed transaction (used by execution)."""
        doc = await self._notebook(path)
        with doc.ydoc.transaction(origin=ydocs.origin_for(action_id)):
            fn(doc)

    async def _set_notebook(
        self, path: str, doc: YNotebook, target: dict[str, Any], action_id: str, what: str
    ) -> dict[str, Any]:
        self._remember_initial(path, doc)
        self._show(doc, path, what)
        origin = ydocs.origin_for(action_id)
        with doc.ydoc.transaction(origin=origin):
            ydocs.set_notebook(doc, target)
        version = self._record(path, doc, origin, action_id, what)
        return {"ops": len(target.get("cells", [])), "created": False, "version": version}

    # ------------------------------------------------------------------ history

    async def versions(self, path: str) -> dict[str, Any]:
        """Recorded versions of a path, oldest first."""
        path = check_path(path)
        return {"versions": [v.to_dict() for v in self.history.versions(path)]}

    async def revert(self, path: str, version: int, action_id: str = "") -> dict[str, Any]:
        """Bring a document back to a recorded version, as a new attributed edit."""
        path = check_path(path)
        try:
            content = self.history.content(path, int(version))
        except KeyError as e:
            raise DocumentError(str(e.args[0])) from e
        async with self._lock(path):
            doc = await self.document(path, create_file=True)
            origin = ydocs.origin_for(action_id)
            if isinstance(doc, YNotebook):
                with doc.ydoc.transaction(origin=origin):
                    ydocs.set_notebook(doc, json.loads(content))
                ops = 0
            else:
                with doc.ydoc.transaction(origin=origin):
                    ops = ydocs.apply_text(source_of(doc), content)
            self._show(doc, path, "revert")
            new = self._record(path, doc, origin, action_id, f"revert to {version}")
            return {"ops": ops, "version": new}
