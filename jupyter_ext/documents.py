"""The agent edits files and notebooks through the collaboration rooms, server side.

    docs = DocumentService(serverapp, history=VersionLog(store_dir / "history.db"))
    await docs.write_text("a.py", "print(1)\\n", action_id="act_1")
    cell_id = (await docs.insert_cell("nb.ipynb", 0, "1 + 1", action_id="act_2"))["cell_id"]

Every operation resolves the room's document afresh through the public API
``settings["jupyter_server_ydoc"].get_document(..., copy=False, create=True)``: a document kept
across calls goes stale once its room is cleaned up (60 s after the last client leaves) and
edits to it would be swallowed. Between that await and the edit there is no other await, so the
edit lands in the live room in one transaction whose origin is ``Think:<action id>``; the room
then broadcasts it, writes it to its ystore and autosaves it. Nothing is written to disk behind
a room: a file that does not exist yet is created empty through the contents manager (no room
can be open on it) and then filled through its room.

RPC methods (``register_document_rpcs``), params -> result, all JSON:

- ``doc.read`` {path} -> {content, kind}; ``doc.write`` {path, content, base?, action_id?}
  -> {ops, created, version}; ``doc.edit`` {path, old, new, replace_all?, action_id?}
  -> {ops, count, version}; ``doc.delete`` {path, action_id?} -> {}
- ``doc.read_notebook`` {path} -> notebook view (cells with ids, sources, outputs summarised)
- ``doc.insert_cell`` {path, index, source, cell_type?, action_id?} -> {cell_id, index, version}
- ``doc.edit_cell`` {path, cell_id, source, base?, action_id?} -> {ops, version}
- ``doc.delete_cell`` {path, cell_id, action_id?} -> {version}
- ``doc.execute_cell`` {path, cell_id, timeout?, wait?, action_id?} -> execution (see
  :mod:`jupyter_ext.execution`); ``doc.execution`` {execution_id, since?, wait?};
  ``doc.interrupt`` {execution_id}
- ``doc.versions`` {path} -> {versions: [...]}; ``doc.revert`` {path, version, action_id?}
  -> {ops, version}

``base`` is the text the agent's edit was computed from: when a human typed since, the edit is
merged into the current text (:func:`merge3`) instead of overwriting what they typed.
"""

from __future__ import annotations

import asyncio
import json
import posixpath
import stat
from collections.abc import Awaitable, Callable
from typing import Any

from jupyter_server.utils import ensure_async
from jupyter_ydoc import YNotebook, YUnicode
from pycrdt import Text
from tornado.web import HTTPError

from think_kernel.collab import ydocs
from think_kernel.collab.history import VersionLog
from think_kernel.safefs import SafeRoot
from think_kernel.tools.textpage import NotUtf8, check_utf8
from think_kernel.tools.workspace import MAX_EDIT_BYTES

RpcHandler = Callable[[Any, dict[str, Any]], Awaitable[dict[str, Any]]]


class DocumentError(Exception):
    """A request the agent can correct (missing file, unknown cell, ...)."""

    def __init__(self, message: str, code: str = "DOCUMENT_ERROR") -> None:
        super().__init__(message)
        self.code = code


def _kind(path: str) -> str:
    return "notebook" if path.endswith(".ipynb") else "file"


def _source(doc: Any) -> Text:
    # "source" is the documented root type of a YUnicode/YFile document.
    return doc.ydoc.get("source", type=Text)


def _check_path(path: str) -> str:
    if not isinstance(path, str) or not path.strip():
        raise DocumentError("path is empty")
    norm = posixpath.normpath(path.strip().replace("\\", "/"))
    if norm.startswith("/") or norm == ".." or norm.startswith("../"):
        raise DocumentError(f"{path!r} is outside the server root")
    return norm


#: Codes of files that are never loaded into a room (see :func:`check_loadable`).
UNLOADABLE = ("NOT_UTF8", "TOO_LARGE", "NOT_REGULAR")


async def check_loadable(
    root_dir: str, path: str, max_bytes: int, checked: dict[str, tuple[int, int, int]]
) -> None:
    """Refuse to load into a room (and the server's memory) what does not belong there:
    anything but a regular file, a file over ``max_bytes``, or one that is not UTF-8
    (jupyter-collaboration would fail to load it, and keep a broken empty room that a later
    save would write over the file). ``checked`` remembers files already found fine, by
    inode, size and mtime, so a file is read once per change (issue 9)."""

    def check() -> None:
        fs = SafeRoot(root_dir)
        try:
            st = fs.stat(path)
            if st is None:
                return
            if not stat.S_ISREG(st.st_mode):
                raise DocumentError(f"{path!r} is not a regular file", "NOT_REGULAR")
            if st.st_size > max_bytes:
                raise DocumentError(
                    f"{path} is {st.st_size} bytes; files over {max_bytes} bytes are not "
                    "loaded into a collaboration room",
                    "TOO_LARGE",
                )
            key = (st.st_ino, st.st_size, st.st_mtime_ns)
            if checked.get(path) == key:
                return
            with fs.open_read(path) as f:
                check_utf8(f)
            checked[path] = key
        except NotUtf8 as e:
            raise DocumentError(
                f"{path} is not UTF-8 text (byte {e.offset}); it is not loaded into a "
                "collaboration room",
                "NOT_UTF8",
            ) from None
        except OSError as e:
            raise DocumentError(str(e), "PATH_NOT_ALLOWED") from None

    await asyncio.to_thread(check)


class DocumentService:
    """Reads and edits documents through the live collaboration rooms."""

    def __init__(
        self, serverapp: Any, history: VersionLog, log: Any = None, max_bytes: int = MAX_EDIT_BYTES
    ) -> None:
        self.serverapp = serverapp
        self.history = history
        self.log = log or serverapp.log
        self.max_bytes = max_bytes  # larger files are never loaded into a room
        self._loadable: dict[str, tuple[int, int, int]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    # ------------------------------------------------------------------ rooms

    @property
    def _settings(self) -> dict[str, Any]:
        return self.serverapp.web_app.settings

    async def _exists(self, path: str) -> bool:
        cm = self.serverapp.contents_manager
        return bool(await ensure_async(cm.file_exists(path)))

    async def document(self, path: str, create_file: bool = False) -> YUnicode | YNotebook:
        """The live shared document of ``path`` (its room is created if needed)."""
        path = _check_path(path)
        if not await self._exists(path):
            if not create_file:
                raise DocumentError(f"{path!r} does not exist")
            await self._create_empty(path)
        ext = self._settings.get("jupyter_server_ydoc")
        if ext is None:
            raise DocumentError("jupyter-collaboration (jupyter_server_ydoc) is not enabled")
        notebook = _kind(path) == "notebook"
        await check_loadable(self.serverapp.root_dir, path, self.max_bytes, self._loadable)
        try:
            doc = await ext.get_document(
                path=path,
                content_type="notebook" if notebook else "file",
                file_format="json" if notebook else "text",
                copy=False,
                create=True,
            )
        except HTTPError as e:  # the contents manager refused to load it (issue 9)
            reason = str(e.log_message or e)
            raise DocumentError(
                reason, "NOT_UTF8" if "UTF-8" in reason else "DOCUMENT_ERROR"
            ) from e
        if doc is None:
            raise DocumentError(f"no collaboration room for {path!r}")
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
        if _kind(path) == "notebook":
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
        self, path: str, content: str, base: str | None = None, action_id: str = ""
    ) -> dict[str, Any]:
        """Make a file's text ``content`` by minimal edits, merged with others' since ``base``."""
        path = _check_path(path)
        async with self._lock(path):
            created = not await self._exists(path)
            doc = await self.document(path, create_file=True)
            if isinstance(doc, YNotebook):
                try:
                    target = json.loads(content)
                except json.JSONDecodeError as e:
                    raise DocumentError(f"{path} is a notebook; content is not JSON: {e}") from e
                return await self._set_notebook(path, doc, target, action_id, "write")
            self._remember_initial(path, doc)
            self._show(doc, path, "write")
            origin = ydocs.origin_for(action_id)
            with doc.ydoc.transaction(origin=origin):
                text = _source(doc)
                current = str(text)
                target = content if base is None else ydocs.merge3(base, content, current)
                ops = ydocs.apply_text(text, target)
            version = self._record(path, doc, origin, action_id, f"write {ops} ops")
            return {"ops": ops, "created": created, "version": version}

    async def edit_text(
        self, path: str, old: str, new: str, replace_all: bool = False, action_id: str = ""
    ) -> dict[str, Any]:
        """Replace ``old`` by ``new`` in the current text, atomically in the room."""
        path = _check_path(path)
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
                ops = ydocs.apply_text(_source(doc), target)
            version = self._record(path, doc, origin, action_id, f"edit {count}x")
            return {"ops": ops, "count": count if replace_all else 1, "version": version}

    async def delete(self, path: str, action_id: str = "") -> dict[str, Any]:
        """Delete a file through the contents manager (as the file browser does)."""
        path = _check_path(path)
        async with self._lock(path):
            if not await self._exists(path):
                raise DocumentError(f"{path!r} does not exist")
            # Keep the last state so that the deletion can be reverted.
            try:
                doc = await self.document(path)
            except DocumentError as e:
                if e.code not in UNLOADABLE:
                    raise
            else:  # a file no room can hold (issue 9) is deleted without a version
                self._remember_initial(path, doc)
                self._record(path, doc, ydocs.origin_for(action_id), action_id, "deleted")
            await ensure_async(self.serverapp.contents_manager.delete(path))
            return {}

    # ------------------------------------------------------------------ notebooks

    async def _notebook(self, path: str, create: bool = False) -> YNotebook:
        if _kind(path) != "notebook":
            raise DocumentError(f"{path!r} is not a notebook (.ipynb)")
        doc = await self.document(path, create_file=create)
        assert isinstance(doc, YNotebook)
        return doc

    async def read_notebook(self, path: str) -> dict[str, Any]:
        """Cells with ids, sources and summarised outputs."""
        doc = await self._notebook(_check_path(path))
        return ydocs.notebook_view(doc.get())

    async def insert_cell(
        self, path: str, index: int, source: str, cell_type: str = "code", action_id: str = ""
    ) -> dict[str, Any]:
        """Insert a new cell (the notebook is created if missing); return its id."""
        path = _check_path(path)
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
        self, path: str, cell_id: str, source: str, base: str | None = None, action_id: str = ""
    ) -> dict[str, Any]:
        """Set a cell's source with a granular diff (merged with others' edits since ``base``)."""
        path = _check_path(path)
        async with self._lock(path):
            doc = await self._notebook(path)
            self._remember_initial(path, doc)
            self._show(doc, path, "edit_cell", cell_id)
            origin = ydocs.origin_for(action_id)
            try:
                with doc.ydoc.transaction(origin=origin):
                    text = doc.ycells[ydocs.find_cell(doc, cell_id)]["source"]
                    target = source if base is None else ydocs.merge3(base, source, str(text))
                    ops = ydocs.apply_text(text, target)
            except KeyError as e:
                raise DocumentError(str(e.args[0])) from e
            version = self._record(path, doc, origin, action_id, f"edit cell {cell_id}")
            return {"ops": ops, "version": version}

    async def delete_cell(self, path: str, cell_id: str, action_id: str = "") -> dict[str, Any]:
        """Delete a cell by id."""
        path = _check_path(path)
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
        path = _check_path(path)
        return {"versions": [v.to_dict() for v in self.history.versions(path)]}

    async def revert(self, path: str, version: int, action_id: str = "") -> dict[str, Any]:
        """Bring a document back to a recorded version, as a new attributed edit."""
        path = _check_path(path)
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
                    ops = ydocs.apply_text(_source(doc), content)
            self._show(doc, path, "revert")
            new = self._record(path, doc, origin, action_id, f"revert to {version}")
            return {"ops": ops, "version": new}


def register_document_rpcs(ext: Any, service: DocumentService | None = None) -> DocumentService:
    """Build the service (and cell executor) and register the ``doc.*`` RPC methods on ``ext``.

    Call once from ``ThinkExtension.initialize_settings``. Also installs TCP_NODELAY on the room
    websockets once the server runs (see :mod:`jupyter_ext.rooms`).
    """
    from .execution import CellExecutor
    from .rooms import enable_room_nodelay, history_path

    serverapp = ext.serverapp
    if service is None:
        service = DocumentService(serverapp, VersionLog(history_path(ext)), ext.log)
    executor = CellExecutor(serverapp, service)

    def p(params: dict[str, Any], key: str, default: Any = ...) -> Any:
        if key in params:
            return params[key]
        if default is ...:
            raise DocumentError(f"missing parameter {key!r}")
        return default

    def aid(params: dict[str, Any]) -> str:
        return str(params.get("action_id") or "")

    async def _kernel_id(kernel_info: Any) -> str:
        if isinstance(kernel_info, dict):
            return str(kernel_info.get("kernel_id") or "")
        return str(getattr(kernel_info, "kernel_id", "") or "")

    handlers: dict[str, RpcHandler] = {
        "doc.read": lambda k, q: service.read_text(p(q, "path")),
        "doc.write": lambda k, q: service.write_text(
            p(q, "path"), p(q, "content"), q.get("base"), aid(q)
        ),
        "doc.edit": lambda k, q: service.edit_text(
            p(q, "path"), p(q, "old"), p(q, "new"), bool(q.get("replace_all")), aid(q)
        ),
        "doc.delete": lambda k, q: service.delete(p(q, "path"), aid(q)),
        "doc.read_notebook": lambda k, q: service.read_notebook(p(q, "path")),
        "doc.insert_cell": lambda k, q: service.insert_cell(
            p(q, "path"),
            int(p(q, "index", -1)),
            p(q, "source"),
            q.get("cell_type") or "code",
            aid(q),
        ),
        "doc.edit_cell": lambda k, q: service.edit_cell(
            p(q, "path"), p(q, "cell_id"), p(q, "source"), q.get("base"), aid(q)
        ),
        "doc.delete_cell": lambda k, q: service.delete_cell(p(q, "path"), p(q, "cell_id"), aid(q)),
        "doc.versions": lambda k, q: service.versions(p(q, "path")),
        "doc.revert": lambda k, q: service.revert(p(q, "path"), int(p(q, "version")), aid(q)),
        "doc.execution": lambda k, q: executor.poll(
            p(q, "execution_id"), int(q.get("since", 0)), float(q.get("wait", 0))
        ),
        "doc.interrupt": lambda k, q: executor.interrupt(p(q, "execution_id")),
    }

    async def execute_cell(kernel_info: Any, q: dict[str, Any]) -> dict[str, Any]:
        return await executor.execute(
            p(q, "path"),
            p(q, "cell_id"),
            timeout=float(q.get("timeout") or 60),
            wait=bool(q.get("wait", True)),
            action_id=aid(q),
            caller_kernel_id=await _kernel_id(kernel_info),
        )

    handlers["doc.execute_cell"] = execute_cell

    def wrap(fn: RpcHandler) -> RpcHandler:
        async def handler(kernel_info: Any, params: dict[str, Any]) -> dict[str, Any]:
            try:
                return await fn(kernel_info, params or {})
            except DocumentError as e:
                return {"error": str(e), "code": e.code}

        return handler

    for name, fn in handlers.items():
        ext.register_rpc(name, wrap(fn))
    ext.settings["think_documents"] = service
    ext.settings["think_cell_executor"] = executor
    enable_room_nodelay(serverapp.web_app, later=True)
    return service
