"""The workspace and the notebooks as a session in review mode sees them: its proposal on top.

    ws = ProposalWorkspace(runtime.workspace, proposal)
    nb = ProposalNotebooks(runtime.services.notebooks, ws)
    ctx.workspace, ctx.services.notebooks = ws.for_call(call_id, send), nb

While the proposal is active (:meth:`~.proposal.Proposal.is_active`, asked at each operation,
so a toggle takes effect at the next tool call) reads answer the proposed content where the
proposal has one, and writes, edits and deletes go to the proposal, based on the version the
agent read; nothing reaches the rooms or the disk. When it is not active every call goes
straight to the live workspace. Other sessions and people use the live workspace and never
see a proposal.
"""

from __future__ import annotations

import json
import posixpath
from typing import TYPE_CHECKING, Any

from ..tools.base import ToolError
from ..tools.textpage import TextPage, page_of_text
from ..tools.workspace import Entry, PathError, StatusSink
from .proposal import KEEP, Proposal

if TYPE_CHECKING:
    from ..collab.access import NotebookAccess, OnWait


def _text(rel: str, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{rel} in the proposal is not UTF-8 text", "NOT_UTF8") from None


class ProposalWorkspace:
    """A :class:`~think_kernel.tools.workspace.Workspace` with the session's proposal on top."""

    def __init__(
        self,
        inner: Any,
        proposal: Proposal,
        based: dict[str, bytes | None] | None = None,
        seen: dict[str, str] | None = None,
    ) -> None:
        self.inner = inner
        self.proposal = proposal
        # What the agent last read of each live file: the base of its first proposed change
        # (shared by the views of every call of the session, as the reads are).
        self.based: dict[str, bytes | None] = {} if based is None else based
        # Text last read from or written to the proposal (edit_file applies to it).
        self._seen: dict[str, str] = {} if seen is None else seen

    def __getattr__(self, name: str) -> Any:
        # root, fs, max_edit_bytes, check_access, flush_rooms, ...: the live workspace's.
        return getattr(self.inner, name)

    def for_call(self, call_id: str, status: StatusSink | None = None) -> ProposalWorkspace:
        """The view one tool call uses (its live edits attributed to it)."""
        inner = self.inner.for_call(call_id, status)
        return ProposalWorkspace(inner, self.proposal, self.based, self._seen)

    def resolve(self, path: str) -> Any:
        """The live workspace's check (links out of the root are refused)."""
        return self.inner.resolve(path)

    def relative(self, full: Any) -> str:
        """The workspace-relative form of an absolute path."""
        return str(self.inner.relative(full))

    def rel(self, path: str) -> str:
        """The checked workspace-relative path (a link inside the root: its target)."""
        return self.relative(self.resolve(path))

    async def _proposed(self, rel: str) -> bytes | None | object:
        if not await self.proposal.is_active():
            return KEEP
        return await self.proposal.read(rel)

    async def base_of(self, rel: str) -> bytes | None:
        """The live version the agent's change of ``rel`` is based on: what it read, else
        the file as it is now (None: absent)."""
        if rel in self.based:
            return self.based[rel]
        seen = getattr(self.inner, "seen", None)
        text = seen(rel) if seen is not None else None
        if text is not None:
            return str(text).encode()
        return await self.inner.snapshot(rel)

    def seen(self, path: str) -> str | None:
        """The text as the agent last read or wrote it (the proposal's, in review mode)."""
        rel = self.rel(path)
        if self.proposal.active and rel in self._seen:
            return self._seen[rel]
        seen = getattr(self.inner, "seen", None)
        return seen(rel) if seen is not None else None

    async def read_text(self, path: str) -> str:
        """The proposed text, else the live file's (remembered as the base)."""
        rel = self.rel(path)
        got = await self._proposed(rel)
        if got is KEEP:
            text = str(await self.inner.read_text(rel))
            if self.proposal.active:
                self.based[rel] = text.encode()
            return text
        if got is None:
            raise PathError(f"{rel!r} does not exist (your proposal deletes it)")
        assert isinstance(got, bytes)
        text = _text(rel, got)
        self._seen[rel] = text
        return text

    async def read_page(self, path: str, offset: int = 1, limit: int = 2000) -> TextPage:
        """A page of the proposed text, else of the live file."""
        rel = self.rel(path)
        got = await self._proposed(rel)
        if got is KEEP:
            page = await self.inner.read_page(rel, offset, limit)
            if self.proposal.active and rel not in self.based:
                self.based[rel] = await self.base_of(rel)
            return page
        if got is None:
            raise PathError(f"{rel!r} does not exist (your proposal deletes it)")
        assert isinstance(got, bytes)
        text = _text(rel, got)
        self._seen[rel] = text
        return page_of_text(text, offset, limit, max_bytes=20_000)

    async def snapshot(self, path: str) -> bytes | None:
        """The file as this session sees it now (proposal first)."""
        rel = self.rel(path)
        got = await self._proposed(rel)
        if got is KEEP:
            return await self.inner.snapshot(rel)
        assert got is None or isinstance(got, bytes)
        return got

    async def write_text(self, path: str, content: str) -> None:
        """Into the proposal in review mode; else to the live file."""
        rel = self.rel(path)
        if not await self.proposal.is_active():
            await self.inner.write_text(rel, content)
            return
        data = content.encode("utf-8")
        await self.proposal.write(rel, data, await self.base_of(rel))
        self._seen[rel] = content

    async def delete(self, path: str) -> None:
        """Proposed in review mode; else the live file is deleted."""
        rel = self.rel(path)
        if not await self.proposal.is_active():
            await self.inner.delete(rel)
            return
        have = await self.proposal.get(rel)
        if have is None:
            base = await self.inner.snapshot(rel)
            if base is None:
                raise PathError(f"{rel!r} does not exist")
        elif have.proposed is None:
            raise PathError(f"{rel!r} does not exist (your proposal deletes it)")
        else:
            base = have.base
        await self.proposal.delete(rel, base)
        self._seen.pop(rel, None)

    async def list(self, path: str = ".") -> list[Entry]:
        """The live listing with the proposal's created and deleted files applied."""
        if not await self.proposal.is_active():
            return list(await self.inner.list(path))
        folder = "" if path in ("", ".", "./") else self.rel(path)
        changes = await self.proposal.changes()
        try:
            entries = {e.path: e for e in await self.inner.list(path)}
        except PathError:
            # A folder only the proposal has.
            if not any(c.path.startswith(folder + "/") for c in changes if c.proposed is not None):
                raise
            entries = {}
        for c in changes:
            parent = posixpath.dirname(c.path)
            if c.proposed is None:
                entries.pop(c.path, None)
            elif parent == folder:
                entries[c.path] = Entry(c.path, False, len(c.proposed))
            elif folder == "" or parent.startswith(folder + "/"):
                below = c.path[len(folder) + 1 :] if folder else c.path
                top = below.split("/", 1)[0]
                sub = posixpath.join(folder, top) if folder else top
                entries.setdefault(sub, Entry(sub, True, 0))
        return [entries[k] for k in sorted(entries)]


class ProposalNotebooks:
    """Notebook access with the proposal on top (the notebook tools' ``services.notebooks``).

    In review mode a cell edit changes the proposed notebook (the live one where the proposal
    has none yet), as nbformat JSON; running a cell is refused, since the notebook's kernel
    runs the live notebook."""

    def __init__(self, inner: NotebookAccess | None, workspace: ProposalWorkspace) -> None:
        self.inner = inner
        self.workspace = workspace
        self.proposal = workspace.proposal

    def _live(self) -> NotebookAccess:
        if self.inner is None:
            raise ToolError("notebook tools are not available in this session", "NO_NOTEBOOKS")
        return self.inner

    async def _load(self, path: str, create: bool = False) -> dict[str, Any]:
        """The notebook as this session sees it (proposal first), as nbformat JSON."""
        from ..collab.local import parse_notebook

        got = await self.proposal.read(path)
        if got is None:
            raise ToolError(f"{path!r} does not exist (your proposal deletes it)", "NOT_FOUND")
        if got is KEEP:
            live = await self.workspace.inner.snapshot(path)
            if live is None:
                if not create:
                    raise PathError(f"{path!r} does not exist")
                from ..collab.ydocs import new_notebook_json

                return new_notebook_json()
            nb = parse_notebook(str(await self.workspace.inner.read_text(path)), path)
            # The base in the proposal's own form: the diff then shows the agent's changes
            # alone (not how nbformat writes what the room holds).
            self.workspace.based[path] = json.dumps(nb, indent=1).encode()
            return nb
        assert isinstance(got, bytes)
        return parse_notebook(_text(path, got), path)

    async def _save(self, path: str, nb: dict[str, Any]) -> None:
        data = json.dumps(nb, indent=1).encode()
        await self.proposal.write(path, data, await self.workspace.base_of(path))

    async def read_notebook(self, path: str) -> dict[str, Any]:
        """Cells with ids, sources and summarised outputs (the proposed notebook's)."""
        if not await self.proposal.is_active():
            return await self._live().read_notebook(path)
        from ..collab.ydocs import notebook_view

        return notebook_view(await self._load(path))

    async def insert_cell(
        self, path: str, index: int, source: str, cell_type: str = "code", action_id: str = ""
    ) -> dict[str, Any]:
        """Insert a cell (into the proposed notebook in review mode)."""
        if not await self.proposal.is_active():
            return await self._live().insert_cell(path, index, source, cell_type, action_id)
        from ..collab.ydocs import new_cell

        nb = await self._load(path, create=True)
        cells = nb.setdefault("cells", [])
        n = len(cells)
        at = n if index == -1 else index
        if not 0 <= at <= n:
            raise ToolError(f"index {index} is out of range: the notebook has {n} cells")
        try:
            cell = new_cell(source, cell_type)
        except ValueError as e:
            raise ToolError(str(e)) from None
        cells.insert(at, cell)
        await self._save(path, nb)
        return {"cell_id": cell["id"], "index": at, "version": 0}

    def _find(self, nb: dict[str, Any], path: str, cell_id: str) -> int:
        for i, c in enumerate(nb.get("cells", [])):
            if c.get("id") == cell_id:
                return i
        raise ToolError(f"no cell {cell_id!r} in {path}; read_notebook shows the ids", "NO_CELL")

    async def edit_cell(
        self,
        path: str,
        cell_id: str,
        source: str,
        action_id: str = "",
        on_wait: OnWait | None = None,
    ) -> dict[str, Any]:
        """Set a cell's source (in the proposed notebook in review mode)."""
        if not await self.proposal.is_active():
            return await self._live().edit_cell(path, cell_id, source, action_id, on_wait)
        nb = await self._load(path)
        cell = nb["cells"][self._find(nb, path, cell_id)]
        cell["source"] = source
        await self._save(path, nb)
        return {"ops": 1, "version": 0}

    async def delete_cell(self, path: str, cell_id: str, action_id: str = "") -> dict[str, Any]:
        """Delete a cell (from the proposed notebook in review mode)."""
        if not await self.proposal.is_active():
            return await self._live().delete_cell(path, cell_id, action_id)
        nb = await self._load(path)
        del nb["cells"][self._find(nb, path, cell_id)]
        await self._save(path, nb)
        return {"version": 0}

    async def execute_cell(self, path: str, cell_id: str, **kw: Any) -> dict[str, Any]:
        """Run a live cell; refused in review mode (the kernel runs the live notebook)."""
        if await self.proposal.is_active():
            raise ToolError(
                "review mode: your notebook edits are a proposal a person reviews, and the "
                "notebook's kernel runs the live notebook, so execute_cell is off. Check code "
                "with execute_code instead.",
                "REVIEW_MODE",
            )
        return await self._live().execute_cell(path, cell_id, **kw)

    async def inspect_variables(self, path: str, names: list[str]) -> dict[str, Any]:
        """The live kernel's variables (no proposal involved)."""
        return await self._live().inspect_variables(path, names)

    async def versions(self, path: str) -> list[dict[str, Any]]:
        """The live document's recorded versions."""
        return await self._live().versions(path)

    async def revert(self, path: str, version: int, action_id: str = "") -> dict[str, Any]:
        """Revert the live document; refused in review mode."""
        if await self.proposal.is_active():
            raise ToolError(
                "review mode: revert changes the live notebook; propose the change with the "
                "cell tools instead",
                "REVIEW_MODE",
            )
        return await self._live().revert(path, version, action_id)
