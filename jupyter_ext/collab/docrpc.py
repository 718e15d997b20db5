"""The ``doc.*`` RPC methods kernels call over their link (see :mod:`.documents` for each).

register_document_rpcs(ext)   # from ThinkExtension.initialize_settings
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from think_kernel.collab.history import VersionLog
from think_kernel.wire.link import RoomsFrame

from .documents import DocumentError, DocumentService, check_path
from .roomfiles import RoomFiles

RpcHandler = Callable[[Any, dict[str, Any]], Awaitable[dict[str, Any]]]
MAX_HOLD = 3600.0  # seconds a sandboxed run may hold autosaves (its kernel may die)
MAX_SYNC_PATHS = 10_000
#: The item a kernel sends, without waiting for an answer, to end the hold of a run that
#: changed no file (``think_kernel.collab.workspace.CollabWorkspace.sync_rooms``).
RELEASE = "doc.release"
#: The item that starts a run's hold when no room was open, so there was nothing to flush:
#: ``{"kind": "doc.hold", "lease", "path", "hold"}`` (the kernel made the lease). The server
#: tells kernels whether any room is open in ``{"type": "rooms", "open": bool}`` frames.
HOLD = "doc.hold"
MAX_LEASE = 64

log = logging.getLogger(__name__)


def register_document_rpcs(ext: Any, service: DocumentService | None = None) -> DocumentService:
    """Build the service (and cell executor) and register the ``doc.*`` RPC methods on ``ext``.

    Call once from ``ThinkExtension.initialize_settings``. Also installs TCP_NODELAY on the room
    websockets once the server runs (see :mod:`jupyter_ext.collab.rooms`).
    """
    from .execution import CellExecutor
    from .rooms import enable_room_nodelay, history_path

    serverapp = ext.serverapp
    if service is None:
        files = RoomFiles(serverapp)
        files.install_later()
        service = DocumentService(serverapp, VersionLog(history_path(ext)), ext.log, files)
    executor = CellExecutor(serverapp, service)
    room_files = service.files

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
            p(q, "path"), p(q, "content"), q.get("base"), aid(q), float(q.get("quiet") or 0)
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
            p(q, "path"),
            p(q, "cell_id"),
            p(q, "source"),
            q.get("base"),
            aid(q),
            float(q.get("quiet") or 0),
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

    def held(q: dict[str, Any]) -> tuple[str, float]:
        """The folder (``""``: the root) and seconds of a flush's or a hold's ``path``/``hold``."""
        folder = check_path(str(q.get("path") or "."))
        seconds = min(max(float(q.get("hold") or 0), 0.0), MAX_HOLD)
        return "" if folder == "." else folder, seconds

    async def flush(kernel_info: Any, q: dict[str, Any]) -> dict[str, Any]:
        if room_files is None:
            return {"saved": [], "lease": None}
        saved, lease = await room_files.flush(*held(q))
        return {"saved": saved, "lease": lease}

    async def sync(kernel_info: Any, q: dict[str, Any]) -> dict[str, Any]:
        paths = q.get("paths") or []
        if not isinstance(paths, list):
            raise DocumentError("paths must be a list")
        checked = [check_path(str(x)) for x in paths[:MAX_SYNC_PATHS]]
        lease = q.get("lease")
        if room_files is None:
            return {"merged": []}
        merged = await room_files.sync(checked, lease if isinstance(lease, str) else None)
        return {"merged": merged}

    handlers["doc.flush"] = flush
    handlers["doc.sync"] = sync
    releasing: set[asyncio.Task[Any]] = set()

    def release(kernel_info: Any, item: dict[str, Any]) -> None:
        """A run changed no file: its hold ends, and what waited for it is saved (the same
        as a ``doc.sync`` of no paths, in the order of the kernel's items, unanswered)."""
        lease = item.get("lease")
        if item.get("kind") != RELEASE or room_files is None or not isinstance(lease, str):
            return
        task = asyncio.ensure_future(room_files.sync([], lease))
        releasing.add(task)

        def done(t: asyncio.Task[Any]) -> None:
            releasing.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.warning("Think: could not end a hold: %s", t.exception())

        task.add_done_callback(done)

    def hold(kernel_info: Any, item: dict[str, Any]) -> None:
        """A run started while no room was open: hold autosaves as ``doc.flush`` would have
        (a room may open during the run). Taken as the item arrives, so before the request
        or item that ends it."""
        if item.get("kind") != HOLD or room_files is None:
            return
        lease = item.get("lease")
        try:
            folder, seconds = held(item)
        except (DocumentError, TypeError, ValueError) as e:
            log.info("Think: a hold refused: %s", e)
            return
        if isinstance(lease, str) and 0 < len(lease) <= MAX_LEASE and seconds > 0:
            room_files.hold(folder, seconds, lease)

    links = getattr(ext, "links", None)
    if links is not None:
        links.item_listeners.append(release)
        links.arrival_listeners.append(hold)
        if room_files is not None:
            room_files.open_listeners.append(lambda now: links.broadcast(RoomsFrame(now)))
            links.connect_listeners.append(
                lambda info, _new: links.send(info.kernel_id, RoomsFrame(room_files.any_open))
            )

    def wrap(fn: RpcHandler) -> RpcHandler:
        async def handler(kernel_info: Any, params: dict[str, Any]) -> dict[str, Any]:
            try:
                return await fn(kernel_info, params or {})
            except DocumentError as e:
                return {"error": str(e), "code": e.code, **e.data}

        return handler

    for name, fn in handlers.items():
        ext.register_rpc(name, wrap(fn))
    ext.settings["think_documents"] = service
    ext.settings["think_cell_executor"] = executor
    enable_room_nodelay(serverapp.web_app, later=True)
    return service
