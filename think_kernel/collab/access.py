"""Notebook access for the notebook tools: a small protocol and the link-backed implementation.

    nb = LinkNotebookAccess(link)                       # link.request(method, params) -> dict
    view = await nb.read_notebook("analysis.ipynb")
    cell = await nb.insert_cell("analysis.ipynb", 0, "df.head()", action_id="act_1")
    result = await nb.execute_cell("analysis.ipynb", cell["cell_id"], timeout=30)

Tools find it at ``ctx.services.notebooks``. The server side is ``jupyter_ext.collab.documents``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from ..tools.base import ToolError

# A person's typing or cursor this recent (seconds) keeps the agent out of that cell or those
# lines; the agent waits at most MAX_WAIT seconds, then edits (a conflict is still refused).
QUIET_SECONDS = 2.0
MAX_WAIT = 15.0
SHOWN_LINES = 200  # a refused edit shows this many lines of the current text at most
OnWait = Callable[[str | None], Awaitable[None]]
"""Told ``"waiting for you to finish typing in cell 3 of a.ipynb"``, then ``None`` when done."""


class ConflictError(ToolError):
    """The edit touched lines someone changed since the agent read them; nothing was written."""

    def __init__(self, message: str, current: str) -> None:
        super().__init__(message, "CONFLICT")
        self.current = current


def conflict_error(result: dict[str, Any], what: str) -> ConflictError:
    """The model-facing refusal: what clashed, the current text, what to do."""
    current = str(result.get("current") or "")
    lines = current.splitlines()
    first = 1
    spans = result.get("lines") or []
    if len(lines) > SHOWN_LINES and spans:
        first = max(1, int(spans[0][0]) - SHOWN_LINES // 4)
    shown = lines[first - 1 : first - 1 + SHOWN_LINES]
    width = len(str(first + len(shown)))
    body = "\n".join(f"{i:>{width}}\t{line}" for i, line in enumerate(shown, start=first))
    more = len(lines) - (first - 1 + len(shown))
    note = f"\n[{more} more lines; read {what} for the rest]" if more > 0 else ""
    message = (
        f"{result.get('error')}. {what} now reads:\n{body or '(empty)'}{note}\n"
        f"Redo your edit on this text (read {what} again if you need more of it)."
    )
    return ConflictError(message, current)


async def call_when_quiet(
    call: Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]],
    method: str,
    params: dict[str, Any],
    on_wait: OnWait | None,
) -> dict[str, Any]:
    """Call an edit RPC that answers ``{"busy", "retry_after"}`` while a person types there;
    wait (bounded, with a status through ``on_wait``) and call again."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + MAX_WAIT
    told = False
    try:
        while True:
            quiet = QUIET_SECONDS if loop.time() < deadline else 0.0
            out = await call(method, {**params, "quiet": quiet})
            busy = out.get("busy")
            if not busy:
                return out
            if on_wait is not None and not told:
                told = True
                await on_wait(str(busy))
            pause = float(out.get("retry_after") or 0.5)
            await asyncio.sleep(max(0.05, min(pause, deadline - loop.time())))
    finally:
        if told and on_wait is not None:
            await on_wait(None)


class Link(Protocol):
    """The kernel's link to the server extension."""

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Call an RPC method on the server and return its result."""
        ...


class NotebookAccess(Protocol):
    """Notebook reads and attributed edits; every edit names its action."""

    async def read_notebook(self, path: str) -> dict[str, Any]:
        """Cells with ids, sources and summarised outputs."""
        ...

    async def insert_cell(
        self, path: str, index: int, source: str, cell_type: str = "code", action_id: str = ""
    ) -> dict[str, Any]:
        """Insert a cell; returns ``{"cell_id", "index", "version"}``."""
        ...

    async def edit_cell(
        self,
        path: str,
        cell_id: str,
        source: str,
        action_id: str = "",
        on_wait: OnWait | None = None,
    ) -> dict[str, Any]:
        """Set a cell's source (granular diff) from the source last read: others' edits since
        merge, an overlapping one raises :class:`ConflictError`; waits (telling ``on_wait``)
        while a person types in the cell."""
        ...

    async def delete_cell(self, path: str, cell_id: str, action_id: str = "") -> dict[str, Any]:
        """Delete a cell."""
        ...

    async def execute_cell(
        self,
        path: str,
        cell_id: str,
        timeout: float = 60,
        action_id: str = "",
        on_output: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
    ) -> dict[str, Any]:
        """Run a cell in the notebook's kernel; ``on_output`` gets outputs as they arrive."""
        ...

    async def inspect_variables(self, path: str, names: list[str]) -> dict[str, Any]:
        """What the variables of the notebook's kernel hold (all when ``names`` is empty),
        read without side effects: ``{"status", "message", "variables", ...}``."""
        ...

    async def versions(self, path: str) -> list[dict[str, Any]]:
        """Recorded versions of a file or notebook."""
        ...

    async def revert(self, path: str, version: int, action_id: str = "") -> dict[str, Any]:
        """Bring a document back to a version (as a new attributed edit)."""
        ...


class LinkNotebookAccess:
    """NotebookAccess over the kernel link (the server edits the live rooms)."""

    def __init__(self, link: Link, poll_wait: float = 0.5) -> None:
        self.link = link
        self.poll_wait = poll_wait
        # Cell sources as last read: an edit is merged with what others typed since.
        self._seen: dict[tuple[str, str], str] = {}

    async def _call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        result = await self.link.request(method, params)
        if isinstance(result, dict) and result.get("error"):
            if result.get("code") == "CONFLICT":
                raise conflict_error(result, f"the cell (read_notebook {params.get('path')})")
            raise ToolError(str(result["error"]), str(result.get("code") or "DOCUMENT_ERROR"))
        return result

    async def read_notebook(self, path: str) -> dict[str, Any]:
        view = await self._call("doc.read_notebook", {"path": path})
        for c in view.get("cells", []):
            self._seen[(path, c["id"])] = c["source"]
        return view

    async def insert_cell(
        self, path: str, index: int, source: str, cell_type: str = "code", action_id: str = ""
    ) -> dict[str, Any]:
        params = {"path": path, "index": index, "source": source, "cell_type": cell_type}
        out = await self._call("doc.insert_cell", {**params, "action_id": action_id})
        self._seen[(path, out["cell_id"])] = source
        return out

    async def edit_cell(
        self,
        path: str,
        cell_id: str,
        source: str,
        action_id: str = "",
        on_wait: OnWait | None = None,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"path": path, "cell_id": cell_id, "source": source}
        base = self._seen.get((path, cell_id))
        if base is not None:
            params["base"] = base
        try:
            out = await call_when_quiet(
                self._call, "doc.edit_cell", {**params, "action_id": action_id}, on_wait
            )
        except ConflictError as e:
            self._seen[(path, cell_id)] = e.current  # the refusal showed it
            raise
        self._seen[(path, cell_id)] = source
        return out

    async def delete_cell(self, path: str, cell_id: str, action_id: str = "") -> dict[str, Any]:
        self._seen.pop((path, cell_id), None)
        params = {"path": path, "cell_id": cell_id, "action_id": action_id}
        return await self._call("doc.delete_cell", params)

    async def execute_cell(
        self,
        path: str,
        cell_id: str,
        timeout: float = 60,
        action_id: str = "",
        on_output: Callable[[dict[str, Any]], Awaitable[None]] | None = None,
    ) -> dict[str, Any]:
        params = {"path": path, "cell_id": cell_id, "timeout": timeout, "wait": False}
        started = await self._call("doc.execute_cell", {**params, "action_id": action_id})
        exec_id = started["execution_id"]
        seen = 0
        try:
            while True:
                state = await self._call(
                    "doc.execution",
                    {"execution_id": exec_id, "since": seen, "wait": self.poll_wait},
                )
                for output in state["outputs"]:
                    if on_output is not None:
                        await on_output(output)
                seen += len(state["outputs"])
                if state["done"]:
                    return state
        except asyncio.CancelledError:
            # The run was stopped: stop the cell too, then let the cancellation through.
            await asyncio.shield(self.link.request("doc.interrupt", {"execution_id": exec_id}))
            raise

    async def inspect_variables(self, path: str, names: list[str]) -> dict[str, Any]:
        return await self._call("vars.inspect", {"path": path, "names": names})

    async def versions(self, path: str) -> list[dict[str, Any]]:
        return list((await self._call("doc.versions", {"path": path}))["versions"])

    async def revert(self, path: str, version: int, action_id: str = "") -> dict[str, Any]:
        params = {"path": path, "version": version, "action_id": action_id}
        return await self._call("doc.revert", params)
