"""Standalone mode (no Jupyter server): file and notebook tools on local Yjs documents.

    workspace, notebooks = local_access("/home/me/project")
    cell = await notebooks.insert_cell("nb.ipynb", 0, "print(1)", action_id="act_1")
    result = await notebooks.execute_cell("nb.ipynb", cell["cell_id"], timeout=30)
    await notebooks.aclose()

Same contracts as the server mode (:class:`~think_kernel.collab.access.NotebookAccess` and the
``Workspace`` protocol), same granular operations (:mod:`think_kernel.collab.ydocs`), with the
history kept by :class:`~think_kernel.collab.ystore.YStore` in ``ydocs.db`` of the workspace's
store folder (outside the workspace, see :mod:`think_kernel.store.location`).
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..store.location import store_dir as default_store_dir
from ..tools.base import ToolError
from ..tools.textpage import TextPage
from ..tools.workspace import LocalWorkspace, PathError, StatusSink
from .access import ConflictError, OnWait, conflict_error
from .kernels import LocalKernels
from .local import LocalDocuments, content_of, is_notebook, set_notebook
from .merge import MergeConflict, merge_edit
from .workspace import read_page_remembered
from .ystore import YStore

if TYPE_CHECKING:
    from jupyter_ydoc import YNotebook

# .ydocs (jupyter-ydoc, pycrdt) is imported by the methods that edit documents, not at start
# (see .local).

# Seconds between writes of a running cell's outputs to the file (each write also validates).
OUTPUT_FLUSH_S = 0.5


def _cell_error(e: KeyError) -> ToolError:
    return ToolError(str(e.args[0]), "NO_SUCH_CELL")


class LocalNotebookAccess:
    """NotebookAccess over local ``.ipynb`` files (and text files, for versions and revert)."""

    def __init__(self, documents: LocalDocuments, kernels: LocalKernels) -> None:
        self.documents = documents
        self.kernels = kernels
        # Cell sources as last read: an edit is merged with what others wrote since.
        self._seen: dict[tuple[str, str], str] = {}

    def _notebook_path(self, path: str) -> str:
        rel = self.documents.rel(path)
        if not is_notebook(rel):
            raise ToolError(f"{path!r} is not a notebook (.ipynb)", "NOT_A_NOTEBOOK")
        return rel

    async def _json(self, rel: str) -> dict[str, Any]:
        from jupyter_ydoc import YNotebook

        doc = await self.documents.read(rel)
        assert isinstance(doc, YNotebook)
        return dict(doc.get())

    async def read_notebook(self, path: str) -> dict[str, Any]:
        """Cells with ids, sources and summarised outputs."""
        from . import ydocs

        rel = self._notebook_path(path)
        view = ydocs.notebook_view(await self._json(rel))
        for c in view["cells"]:
            self._seen[(rel, c["id"])] = c["source"]
        return view

    async def insert_cell(
        self, path: str, index: int, source: str, cell_type: str = "code", action_id: str = ""
    ) -> dict[str, Any]:
        """Insert a cell (the notebook is created if missing); returns its id and index."""
        from . import ydocs

        rel = self._notebook_path(path)

        def insert(ynb: YNotebook) -> tuple[str, int]:
            try:
                cell_id = ydocs.insert_cell(ynb, index, source, cell_type)
            except ValueError as e:
                raise ToolError(str(e)) from None
            return cell_id, ydocs.find_cell(ynb, cell_id)

        (cell_id, at), version = await self.documents.edit(
            rel, insert, action_id=action_id, summary="insert cell", create=True
        )
        self._seen[(rel, cell_id)] = source
        return {"cell_id": cell_id, "index": at, "version": version}

    async def edit_cell(
        self,
        path: str,
        cell_id: str,
        source: str,
        action_id: str = "",
        on_wait: OnWait | None = None,
    ) -> dict[str, Any]:
        """Set a cell's source by a granular diff, merged with changes made since it was read
        (an overlapping change is refused with :class:`ConflictError`)."""
        from . import ydocs

        rel = self._notebook_path(path)
        base = self._seen.get((rel, cell_id))

        def edit(ynb: YNotebook) -> int:
            try:
                text = ynb.ycells[ydocs.find_cell(ynb, cell_id)]["source"]
            except KeyError as e:
                raise _cell_error(e) from None
            current = str(text)
            try:
                target = source if base is None else merge_edit(base, source, current)
            except MergeConflict as e:
                result = {"error": f"cell {cell_id} of {rel} {e}", "current": current}
                raise conflict_error(result, f"the cell (read_notebook {rel})") from None
            return ydocs.apply_text(text, target)

        try:
            ops, version = await self.documents.edit(
                rel, edit, action_id=action_id, summary=f"edit cell {cell_id}"
            )
        except ConflictError as e:
            self._seen[(rel, cell_id)] = e.current
            raise
        self._seen[(rel, cell_id)] = source
        return {"ops": ops, "version": version}

    async def delete_cell(self, path: str, cell_id: str, action_id: str = "") -> dict[str, Any]:
        """Delete a cell."""
        from . import ydocs

        rel = self._notebook_path(path)

        def delete(ynb: YNotebook) -> None:
            try:
                ydocs.delete_cell(ynb, cell_id)
            except KeyError as e:
                raise _cell_error(e) from None

        _, version = await self.documents.edit(
            rel, delete, action_id=action_id, summary=f"delete cell {cell_id}"
        )
        self._seen.pop((rel, cell_id), None)
        return {"version": version}

    async def execute_cell(
        self,
        path: str,
        cell_id: str,
        timeout: float = 60,
        action_id: str = "",
        on_output: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
    ) -> dict[str, Any]:
        """Run a code cell in a kernel of the notebook's kernelspec; outputs go into the file."""
        from . import ydocs

        rel = self._notebook_path(path)
        nb = await self._json(rel)
        try:
            cell = nb["cells"][[c.get("id") for c in nb["cells"]].index(cell_id)]
        except ValueError:
            raise ToolError(f"no cell with id {cell_id!r} in {path}", "NO_SUCH_CELL") from None
        if cell.get("cell_type") != "code":
            raise ToolError(f"cell {cell_id} is a {cell.get('cell_type')} cell, not code")
        kernel = (nb.get("metadata", {}).get("kernelspec") or {}).get("name") or "python3"
        summary = f"execute cell {cell_id}"
        docs = self.documents
        last_flush = time.monotonic()

        async def update(fn: Callable[[YNotebook], None], commit: bool = False) -> None:
            def guarded(ynb: YNotebook) -> None:
                try:
                    fn(ynb)
                except KeyError:
                    pass  # the cell was deleted meanwhile: outputs still go to the agent

            await docs.edit(rel, guarded, action_id=action_id, summary=summary, commit=commit)

        async def output(out: dict[str, Any]) -> None:
            nonlocal last_flush
            flush = time.monotonic() - last_flush >= OUTPUT_FLUSH_S
            await update(lambda ynb: ydocs.append_output(ynb, cell_id, out), commit=flush)
            if flush:
                last_flush = time.monotonic()
            if on_output is not None:
                await on_output(out)

        def start(ynb: YNotebook) -> None:
            ydocs.clear_outputs(ynb, cell_id)
            ydocs.set_execution_state(ynb, cell_id, "busy")

        await update(start, commit=True)
        run = None
        try:
            run = await self.kernels.run(
                rel,
                kernel,
                cell["source"],
                timeout=timeout,
                on_output=output,
                on_clear=lambda: update(lambda ynb: ydocs.clear_outputs(ynb, cell_id)),
            )
        finally:
            count = run.execution_count if run is not None else None

            def finish(ynb: YNotebook) -> None:
                ydocs.set_execution_count(ynb, cell_id, count)
                ydocs.set_execution_state(ynb, cell_id, "idle")

            # Also when the run failed or was cancelled: the file must not stay "busy".
            await asyncio.shield(update(finish, commit=True))
        return {
            "path": rel,
            "cell_id": cell_id,
            "status": run.status,
            "done": True,
            "execution_count": run.execution_count,
            "outputs": run.outputs,
            "output_count": len(run.outputs),
            "outputs_text": ydocs.summarise_outputs(run.outputs),
            "error": run.error,
            "duration_s": run.duration_s,
        }

    async def inspect_variables(self, path: str, names: list[str]) -> dict[str, Any]:
        """Not without a server: a notebook's kernel is the one its tab runs, which only the
        Jupyter server knows."""
        return {
            "status": "not_supported",
            "path": path,
            "message": "reading a notebook's variables needs the Jupyter server (this kernel "
            "runs without one)",
            "variables": [],
        }

    async def versions(self, path: str) -> list[dict[str, Any]]:
        """Recorded versions of a file or notebook, oldest first."""
        return await asyncio.to_thread(self.documents.versions, path)

    async def revert(self, path: str, version: int, action_id: str = "") -> dict[str, Any]:
        """Bring a document back to a version, as a new attributed version."""
        rel = self.documents.rel(path)
        out = await self.documents.revert(rel, version, action_id)
        # What was read before no longer describes the cells: forget it.
        for key in [k for k in self._seen if k[0] == rel]:
            del self._seen[key]
        return out

    async def content(self, path: str, version: int) -> str:
        """A document's content at a version (notebooks as JSON)."""
        try:
            doc = await asyncio.to_thread(self.documents.replay, path, version)
        except KeyError as e:
            raise ToolError(str(e.args[0]), "NO_SUCH_VERSION") from None
        return content_of(doc)

    async def aclose(self) -> None:
        """Shut down the kernels started for cells and close the store."""
        await self.kernels.aclose()
        self.documents.store.close()


class LocalCollabWorkspace(LocalWorkspace):
    """The local workspace, with every write and delete recorded in the document store.

    Reads come from disk; a write is merged (:func:`ydocs.merge3`) with what changed on disk
    since the file was read, applied as a minimal diff and recorded as an attributed version.
    """

    def __init__(self, root: str | os.PathLike[str], documents: LocalDocuments) -> None:
        super().__init__(root)
        self.documents = documents
        self.action_id = ""  # the tool call whose edits these are (see for_call)
        self._seen: dict[str, str] = {}

    def for_call(self, call_id: str, status: StatusSink | None = None) -> LocalCollabWorkspace:
        """A view for one tool call: its versions carry the call's id (a shallow copy, so
        concurrent calls keep their own; what was read stays shared)."""
        view = copy.copy(self)
        view.action_id = call_id
        return view

    async def read_text(self, path: str) -> str:
        """Read a file from disk (and remember it as the base of the next write)."""
        text = await super().read_text(path)
        self._seen[self.relative(self.resolve(path))] = text
        return text

    async def read_page(self, path: str, offset: int = 1, limit: int = 2000) -> TextPage:
        """A page; a file small enough to edit is read whole, as the base of the next write."""
        return await read_page_remembered(self, path, offset, limit, super().read_page)

    async def write_text(self, path: str, content: str) -> None:
        """Write by a minimal diff, merged with changes made on disk since the read."""
        from pycrdt import Text

        from . import ydocs

        rel = self.relative(self.resolve(path))
        if self.resolve(path).is_dir():
            raise PathError(f"{path!r} is a directory")
        if is_notebook(rel):
            await self._write_notebook(rel, content)
        else:
            base = self._seen.get(rel)

            def write(doc: Any) -> int:
                text = doc.ydoc.get("source", type=Text)
                current = str(text)
                try:
                    target = content if base is None else merge_edit(base, content, current)
                except MergeConflict as e:
                    result = {"error": f"{rel} {e}", "current": current}
                    raise conflict_error(result, f"{rel} (read_file)") from None
                return ydocs.apply_text(text, target)

            try:
                await self.documents.edit(
                    rel, write, action_id=self.action_id, summary="write", create=True
                )
            except ConflictError as e:
                self._seen[rel] = e.current
                raise
        self._seen[rel] = content

    def seen(self, path: str) -> str | None:
        """The file's text as the agent last read or wrote it (None: not read yet)."""
        return self._seen.get(self.relative(self.resolve(path)))

    async def _write_notebook(self, rel: str, content: str) -> None:
        try:
            target = json.loads(content)
        except json.JSONDecodeError as e:
            raise ToolError(f"{rel} is a notebook; content is not JSON: {e}") from None
        await self.documents.edit(
            rel,
            lambda ynb: set_notebook(ynb, target),
            action_id=self.action_id,
            summary="write",
            create=True,
        )

    async def delete(self, path: str) -> None:
        """Delete a file; its last state stays in the history (revert brings it back)."""
        full = self.resolve(path)
        if full == self.root or full.is_dir():
            raise PathError(f"{path!r} is a directory; only files can be deleted")
        rel = self.relative(full)
        try:
            await self.documents.delete(rel, action_id=self.action_id)
        except ToolError as e:
            if e.code not in ("NOT_UTF8", "TOO_LARGE"):
                raise
            # Not text the history can hold: deleted without a version.
            self.documents.forget(rel)
            await LocalWorkspace.delete(self, rel)
        self._seen.pop(rel, None)


def local_access(
    workspace_root: str | os.PathLike[str], store_dir: str | os.PathLike[str] | None = None
) -> tuple[LocalCollabWorkspace, LocalNotebookAccess]:
    """The standalone workspace and notebook access, sharing one document store.

    Call once per runtime when there is no server link; use ``workspace.for_call`` per tool
    call, put ``notebooks`` at ``ctx.services.notebooks``, and ``await notebooks.aclose()``
    when the runtime closes (it shuts the cell kernels down and closes the store). History
    lives in ``<store_dir>/ydocs.db``, ``store_dir`` defaulting to the workspace's store
    folder in the Jupyter data directory.
    """
    root = Path(workspace_root).resolve()
    store = YStore(Path(store_dir or default_store_dir(root)) / "ydocs.db")
    documents = LocalDocuments(root, store)
    return LocalCollabWorkspace(root, documents), LocalNotebookAccess(documents, LocalKernels(root))
