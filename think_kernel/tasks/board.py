"""The task graphs of a store, changed through the pure core and announced as events.

    board = TaskBoard(store, emit, limits=lambda: Limits())
    root = await board.begin(session_id, "plot the sales data", message_id)  # in progress
    a = await board.create(root["id"], title="Load the CSV", type="explore")
    b = await board.create(root["id"], title="Plot it", dependencies=[a["id"]])  # blocked
    await board.complete(a["id"], "3 columns, 120 rows")                          # b: pending
    await board.end(root["id"], "complete")

Each change loads one request's tasks (at most ``max_tasks`` rows), applies a function of
:mod:`.graph`, writes the rows that changed in one statement and emits ``task_created`` /
``task_updated`` with the whole task object of every task that changed, its ancestors'
progress included. Invalid changes raise :class:`~.graph.TaskError` and write nothing.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..agent.events import Event, TaskCreated, TaskUpdated
from . import graph as G
from .shape import graph_of, nest, objects, overall

if TYPE_CHECKING:
    from ..store import Store

Emit = Callable[[Event], Any]
Op = Callable[[G.Graph], G.Graph]
ROOT_TITLE_CHARS = 100
NAME = re.compile(r"[A-Za-z0-9_-]{1,40}")


def new_task_id() -> str:
    """A short unique id the model can copy (``t_`` + 10 hex digits)."""
    return "t_" + uuid.uuid4().hex[:10]


def root_title(request: str) -> str:
    """A root task's title: the request's first line, clipped."""
    line = next((ln.strip() for ln in request.splitlines() if ln.strip()), "") or "request"
    return line if len(line) <= ROOT_TITLE_CHARS else line[: ROOT_TITLE_CHARS - 1] + "…"


class TaskBoard:
    """Task graphs in the store, with events for every change."""

    def __init__(self, store: Store, emit: Emit, limits: Callable[[], G.Limits] = G.Limits) -> None:
        self.store = store
        self.emit = emit
        self.limits = limits
        # One process changes one request's graph at a time (load, apply, save).
        self._lock = asyncio.Lock()

    # -- a request's root --------------------------------------------------------------------

    async def begin(
        self, session_id: str, request: str, message_id: str, new: bool = False
    ) -> dict[str, Any]:
        """The root task of a request (started); a retried request finds its own again
        (``new``: the message was never run, there is nothing to find)."""
        existing = None if new else await self.store.root_of_message(message_id)
        if existing is not None and existing["status"] not in G.FINAL:
            if existing["status"] == "in_progress":
                return await self._object(existing["id"])
            return await self._change(existing["id"], lambda g: G.start(g, existing["id"]))
        root_id = new_task_id()
        fresh = {"session_id": session_id, "root_id": root_id, "message_id": message_id}

        def make(g: G.Graph) -> G.Graph:
            task = G.Task(root_id, root_title(request), type="plan", description=request[:2000])
            return G.start(G.add(g, task, self.limits()), root_id)

        return await self._change(root_id, make, {root_id: fresh}, new=True)

    async def end(self, root_id: str, status: str, reason: str | None = None) -> None:
        """The request ended (complete, failed or cancelled): its unfinished tasks are
        cancelled, its root takes the status."""

        def finish(g: G.Graph) -> G.Graph:
            if g[root_id].status in G.FINAL:
                return g
            if status == "complete":
                note = "not finished when the request ended"
                for child in G.children(g, root_id):
                    if child.status not in G.FINAL:
                        g = G.cancel(g, child.id, note)
                return G.complete(g, root_id)
            if status == "cancelled":
                return G.cancel(g, root_id, reason or "the request was cancelled")
            return G.fail(g, root_id, reason or "the request failed")

        await self._change(root_id, finish)

    # -- the model's tasks -------------------------------------------------------------------

    async def create(
        self,
        root_id: str,
        *,
        title: str,
        type: str = "code",
        description: str = "",
        parent_id: str | None = None,
        dependencies: Sequence[str] = (),
        message_id: str | None = None,
        name: str | None = None,
    ) -> dict[str, Any]:
        """Add a subtask (under the root unless ``parent_id``); returns its task object.
        ``name`` (short, unique in the request) makes its id ``<root id>.<name>``, so a plan
        can name its dependencies before they exist; ids and names are both accepted."""
        if name is not None and (not NAME.fullmatch(name) or name.startswith("t_")):
            raise G.TaskError(
                f"a task name is 1-40 letters, digits, '-' or '_' (not starting with t_), "
                f"not {name!r}"
            )
        task_id = f"{root_id}.{name}" if name else new_task_id()
        root = await self.store.get_task(root_id)
        if root is None:
            raise G.TaskError(f"no request task {root_id!r}")
        if parent_id:
            parent_id = self.resolve(root_id, parent_id)
        dependencies = [self.resolve(root_id, d) for d in dependencies]
        fresh = {"session_id": root["session_id"], "root_id": root_id, "message_id": message_id}
        task = G.Task(
            task_id,
            title.strip()[:200],
            type=type,
            parent_id=parent_id or root_id,
            dependencies=tuple(dependencies),
            description=description[:4000],
        )
        return await self._change(
            root_id, lambda g: G.add(g, task, self.limits()), {task_id: fresh}, focus=task_id
        )

    async def start(self, task_id: str) -> dict[str, Any]:
        """Start a pending task."""
        return await self._on(task_id, lambda g: G.start(g, task_id))

    async def complete(self, task_id: str, result: str | None = None) -> dict[str, Any]:
        """Complete a task with its result."""
        return await self._on(task_id, lambda g: G.complete(g, task_id, result))

    async def fail(self, task_id: str, error: str | None = None) -> dict[str, Any]:
        """Fail a task (its unfinished subtasks are cancelled)."""
        return await self._on(task_id, lambda g: G.fail(g, task_id, error))

    async def cancel(self, task_id: str, reason: str | None = None) -> dict[str, Any]:
        """Cancel a task and its unfinished subtasks."""
        return await self._on(task_id, lambda g: G.cancel(g, task_id, reason))

    async def set_subagent(
        self, task_id: str, *, when_status: str | None = None, **fields: Any
    ) -> bool:
        """Change the task's subagent fields (see ``Store.update_subagent``); emits
        ``task_updated`` when the row changed."""
        async with self._lock:
            changed = await self.store.update_subagent(task_id, when_status=when_status, **fields)
        if changed:
            await self.send(TaskUpdated(await self._object(task_id)))
        return changed

    # -- reading -----------------------------------------------------------------------------

    @staticmethod
    def resolve(root_id: str, ref: str) -> str:
        """A task id from what the model wrote: an id, or a name given in this request."""
        ref = ref.strip()
        return f"{root_id}.{ref}" if NAME.fullmatch(ref) and not ref.startswith("t_") else ref

    async def get(self, task_id: str) -> dict[str, Any] | None:
        """A task object, or None."""
        row = await self.store.get_task(task_id)
        return None if row is None else await self._object(task_id, row)

    async def request_tasks(self, root_id: str) -> list[dict[str, Any]]:
        """The task objects of one request, root first."""
        return objects(await self.store.tasks_of_root(root_id))

    async def session_tree(self, session_id: str) -> dict[str, Any]:
        """``{"tasks": [roots with "children"], "progress": ...}`` (GET .../tasks)."""
        objs = objects(await self.store.list_tasks(session_id))
        return {"tasks": nest(objs), "progress": overall(objs)}

    async def session_flat(self, session_id: str) -> list[dict[str, Any]]:
        """Every task object of a session, in creation order (GET .../tasks?flat=1)."""
        return objects(await self.store.list_tasks(session_id))

    # -- internals ---------------------------------------------------------------------------

    async def _root_of(self, task_id: str) -> str:
        row = await self.store.get_task(task_id)
        if row is None:
            raise G.TaskError(f"no task {task_id!r}")
        return str(row.get("root_id") or row["id"])

    async def _on(self, task_id: str, op: Op) -> dict[str, Any]:
        return await self._change(await self._root_of(task_id), op, focus=task_id)

    async def _object(self, task_id: str, row: dict[str, Any] | None = None) -> dict[str, Any]:
        row = row or await self.store.get_task(task_id)
        assert row is not None
        objs = objects(await self.store.tasks_of_root(str(row.get("root_id") or row["id"])))
        return next(o for o in objs if o["id"] == task_id)

    async def _change(
        self,
        root_id: str,
        op: Op,
        fresh: dict[str, dict[str, Any]] | None = None,
        focus: str | None = None,
        new: bool = False,
    ) -> dict[str, Any]:
        """Apply ``op`` to a request's graph, save and announce what changed; return the
        object of ``focus`` (default: the root). ``new``: the request has no rows yet."""
        async with self._lock:
            rows = [] if new else await self.store.tasks_of_root(root_id)
            before = {o["id"]: o for o in objects(rows)}
            graph = graph_of(rows)
            after = op(graph)
            by_id = {str(r["id"]): r for r in rows}
            save = []
            for task_id in G.changed(graph, after):
                task = after[task_id]
                row = dict(by_id.get(task_id) or (fresh or {}).get(task_id) or {})
                row.update(
                    id=task.id,
                    title=task.title,
                    type=task.type,
                    status=task.status,
                    parent_id=task.parent_id,
                    dependencies=list(task.dependencies),
                    description=task.description,
                    result=task.result,
                    error=task.error,
                )
                save.append(row)
            written = {str(r["id"]): r for r in await self.store.save_tasks(save)}
            # The rows as they are now, in creation order, without reading them back.
            current = [{**by_id.get(k, {}), **written.get(k, {})} for k in after]
            now = objects(current) if save else list(before.values())
        for obj in now:
            old = before.get(obj["id"])
            if old is None:
                await self.send(TaskCreated(obj))
            elif _differs(old, obj):
                await self.send(TaskUpdated(obj))
        wanted = focus or root_id
        return next(o for o in now if o["id"] == wanted)

    async def send(self, event: Event) -> None:
        """Emit an event (sync or async emit)."""
        res = self.emit(event)
        if inspect.isawaitable(res):
            await res


def _differs(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return {k: v for k, v in a.items() if k != "updated_at"} != {
        k: v for k, v in b.items() if k != "updated_at"
    }
