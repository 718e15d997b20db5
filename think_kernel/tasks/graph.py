"""The task graph as pure functions over plain data (no I/O, no clock, no mutation).

    g = add({}, Task("root", "Answer the request", status="pending"))
    g = start(g, "root")
    g = add(g, Task("a", "Read the data", type="explore", parent_id="root"))
    g = add(g, Task("b", "Plot it", parent_id="root", dependencies=("a",)))   # b is blocked
    g = complete(start(g, "a"), "a", result="3 columns")                      # b is pending
    ready(g)            # [Task b]
    progress(g, "root") # share of the root's work that is finished

A graph is a mapping ``id -> Task`` in creation order; every operation returns a new one and
raises :class:`TaskError` (leaving its input as it was) when the operation is invalid.

Rules (the limits are a :class:`Limits`):

- ids are unique; a parent and every dependency must exist; a task may not depend on itself
  or on one of its ancestors (they finish after it), and dependencies never form a cycle;
- depth (the root is 0) at most ``max_depth``, at most ``max_children`` children per task,
  at most ``max_tasks`` tasks;
- ``complete``, ``failed`` and ``cancelled`` are final; a task is started only when it is
  ``pending`` (every dependency complete); a ``pending`` task with an unfinished dependency
  is ``blocked`` and goes back to ``pending`` when the last one completes;
- a task completes only when none of its subtasks is unfinished; failing or cancelling a
  task cancels its unfinished subtasks.

Progress of a task is the finished share of its subtree: a finished (complete or failed)
task is 1; otherwise ``sum(children) / (children + 1)``, the task itself counting as one
unfinished unit, cancelled children left out. It stays in [0, 1] and never goes down when a
task completes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

TYPES = ("explore", "code", "test", "review", "plan", "fix")
STATUSES = ("pending", "in_progress", "blocked", "complete", "failed", "cancelled")
FINAL = frozenset({"complete", "failed", "cancelled"})
OPEN = frozenset({"pending", "blocked"})  # not started yet


class TaskError(ValueError):
    """An operation the graph's rules refuse; the message says why (the model reads it)."""


@dataclass(frozen=True)
class Limits:
    """Size limits of one graph (configurable: ``ThinkConfig.task_*``)."""

    max_depth: int = 3
    max_children: int = 10
    max_tasks: int = 50


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class Task:
    """One task: what to do, where it sits in the tree, what it waits for, how it ended."""

    id: str
    title: str
    type: str = "code"
    status: str = "pending"
    parent_id: str | None = None
    dependencies: tuple[str, ...] = ()
    description: str = ""
    result: str | None = None
    error: str | None = None


Graph = Mapping[str, Task]


# -- queries ---------------------------------------------------------------------------------


def children(graph: Graph, task_id: str) -> list[Task]:
    """Direct subtasks, in creation order."""
    return [t for t in graph.values() if t.parent_id == task_id]


def roots(graph: Graph) -> list[Task]:
    """Tasks without a parent, in creation order."""
    return [t for t in graph.values() if t.parent_id is None]


def ancestors(graph: Graph, task_id: str) -> list[Task]:
    """The parent, its parent, ... up to the root."""
    out: list[Task] = []
    parent = graph[task_id].parent_id
    while parent is not None and parent in graph and len(out) <= len(graph):
        out.append(graph[parent])
        parent = graph[parent].parent_id
    return out


def descendants(graph: Graph, task_id: str) -> list[Task]:
    """Every task below this one, depth first, in creation order."""
    index = _child_index(graph)
    out: list[Task] = []
    stack = list(reversed(index.get(task_id, [])))
    while stack:
        node = stack.pop()
        out.append(graph[node])
        stack.extend(reversed(index.get(node, [])))
    return out


def depth(graph: Graph, task_id: str) -> int:
    """0 for a root, 1 for its children, ..."""
    return len(ancestors(graph, task_id))


def blockers(graph: Graph, task_id: str) -> list[str]:
    """Ids of the task's dependencies that are not complete."""
    return [d for d in graph[task_id].dependencies if graph[d].status != "complete"]


def ready(graph: Graph) -> list[Task]:
    """Tasks that can start now."""
    return [t for t in graph.values() if t.status == "pending"]


def active(graph: Graph) -> list[Task]:
    """Tasks in progress."""
    return [t for t in graph.values() if t.status == "in_progress"]


def blocked(graph: Graph) -> list[Task]:
    """Tasks waiting on a dependency."""
    return [t for t in graph.values() if t.status == "blocked"]


def tree(graph: Graph, task_id: str | None = None) -> list[tuple[Task, list]]:
    """Nested ``(task, [(child, [...]), ...])`` pairs of the roots (or of one task)."""
    top = [graph[task_id]] if task_id is not None else roots(graph)

    def node(task: Task) -> tuple[Task, list]:
        return task, [node(c) for c in children(graph, task.id)]

    return [node(t) for t in top]


def progress(graph: Graph, task_id: str) -> float:
    """The finished share of a task's subtree, in [0, 1] (see the module doc)."""
    return _progress(graph, task_id, _child_index(graph))


def progress_all(graph: Graph) -> dict[str, float]:
    """:func:`progress` of every task, in one pass."""
    index = _child_index(graph)
    memo: dict[str, float] = {}
    for task_id in graph:
        _progress(graph, task_id, index, memo)
    return memo


def overall(graph: Graph) -> float:
    """Progress of the whole graph: the mean of its roots' (0 for an empty graph)."""
    tops = roots(graph)
    if not tops:
        return 0.0
    each = progress_all(graph)
    return sum(each[t.id] for t in tops) / len(tops)


def _child_index(graph: Graph) -> dict[str, list[str]]:
    index: dict[str, list[str]] = {}
    for t in graph.values():
        if t.parent_id is not None:
            index.setdefault(t.parent_id, []).append(t.id)
    return index


def _progress(
    graph: Graph,
    task_id: str,
    index: dict[str, list[str]],
    memo: dict[str, float] | None = None,
) -> float:
    memo = {} if memo is None else memo
    if task_id in memo:
        return memo[task_id]
    task = graph[task_id]
    if task.status in ("complete", "failed"):
        value = 1.0
    else:
        kids = [k for k in index.get(task_id, ()) if graph[k].status != "cancelled"]
        done = sum(_progress(graph, k, index, memo) for k in kids)
        value = done / (len(kids) + 1)
    memo[task_id] = value
    return value


def has_cycle(graph: Graph) -> bool:
    """Whether the dependency edges form a cycle."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in graph:
        if state.get(start):
            continue
        stack: list[tuple[str, Iterable[str]]] = [(start, iter(graph[start].dependencies))]
        state[start] = 1
        while stack:
            node, deps = stack[-1]
            nxt = next((d for d in deps if d in graph), None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return True
            elif not state.get(nxt):
                state[nxt] = 1
                stack.append((nxt, iter(graph[nxt].dependencies)))
    return False


# -- operations ------------------------------------------------------------------------------


def add(graph: Graph, task: Task, limits: Limits = DEFAULT_LIMITS) -> dict[str, Task]:
    """Add a new task (``pending``, or ``blocked`` while a dependency is unfinished)."""
    if not task.id or not task.id.strip():
        raise TaskError("a task needs an id")
    if task.id in graph:
        raise TaskError(f"there is already a task {task.id!r}")
    if not task.title.strip():
        raise TaskError("a task needs a title")
    if task.type not in TYPES:
        raise TaskError(f"unknown task type {task.type!r}; types: {', '.join(TYPES)}")
    if task.status not in OPEN:
        raise TaskError(f"a new task is pending, not {task.status!r}")
    if len(graph) >= limits.max_tasks:
        raise TaskError(f"at most {limits.max_tasks} tasks per request")
    if task.parent_id is not None:
        parent = _get(graph, task.parent_id, "parent task")
        if parent.status in FINAL:
            raise TaskError(f"task {parent.id!r} is {parent.status}: it takes no new subtasks")
        if depth(graph, parent.id) + 1 > limits.max_depth:
            raise TaskError(
                f"task {parent.id!r} is at depth {depth(graph, parent.id)}; subtasks may be at "
                f"most {limits.max_depth} levels below the request"
            )
        if len(children(graph, parent.id)) >= limits.max_children:
            raise TaskError(f"task {parent.id!r} already has {limits.max_children} subtasks")
    new = dict(graph)
    new[task.id] = dataclasses.replace(task, dependencies=())
    for dep in task.dependencies:
        new = _with_dependency(new, task.id, dep)
    return _settle(new, [task.id])


def add_dependency(graph: Graph, task_id: str, dependency: str) -> dict[str, Task]:
    """Make a task that has not started wait for another one as well."""
    task = _get(graph, task_id, "task")
    if task.status not in OPEN:
        raise TaskError(f"task {task_id!r} is {task.status}: only tasks not started yet wait")
    return _settle(_with_dependency(dict(graph), task_id, dependency), [task_id])


def start(graph: Graph, task_id: str) -> dict[str, Task]:
    """``pending`` -> ``in_progress``."""
    task = _get(graph, task_id, "task")
    if task.status == "blocked":
        waiting = ", ".join(blockers(graph, task_id))
        raise TaskError(f"task {task_id!r} is blocked: it waits for {waiting}")
    if task.status != "pending":
        raise TaskError(f"task {task_id!r} is {task.status}; only a pending task starts")
    return {**graph, task_id: dataclasses.replace(task, status="in_progress")}


def complete(graph: Graph, task_id: str, result: str | None = None) -> dict[str, Task]:
    """Finish a task (pending or in progress) whose subtasks are all finished; its dependents
    that waited only for it become pending."""
    task = _get(graph, task_id, "task")
    if task.status == "blocked":
        raise TaskError(f"task {task_id!r} is blocked by {', '.join(blockers(graph, task_id))}")
    if task.status not in ("pending", "in_progress"):
        raise TaskError(f"task {task_id!r} is already {task.status}")
    unfinished = [t.id for t in descendants(graph, task_id) if t.status not in FINAL]
    if unfinished:
        raise TaskError(
            f"task {task_id!r} has unfinished subtasks ({', '.join(unfinished)}): complete, "
            "fail or cancel them first"
        )
    new = {**graph, task_id: dataclasses.replace(task, status="complete", result=result)}
    return _settle(new, [t.id for t in new.values() if task_id in t.dependencies])


def fail(graph: Graph, task_id: str, error: str | None = None) -> dict[str, Task]:
    """A task failed; its unfinished subtasks are cancelled."""
    task = _get(graph, task_id, "task")
    if task.status in FINAL:
        raise TaskError(f"task {task_id!r} is already {task.status}")
    new = _cancel_below(dict(graph), task_id)
    new[task_id] = dataclasses.replace(task, status="failed", error=error)
    return new


def cancel(graph: Graph, task_id: str, reason: str | None = None) -> dict[str, Task]:
    """Cancel a task and its unfinished subtasks."""
    task = _get(graph, task_id, "task")
    if task.status in FINAL:
        raise TaskError(f"task {task_id!r} is already {task.status}")
    new = _cancel_below(dict(graph), task_id)
    new[task_id] = dataclasses.replace(task, status="cancelled", error=reason or task.error)
    return new


def changed(before: Graph, after: Graph) -> list[str]:
    """Ids of tasks that are new or different in ``after``, in its order."""
    return [k for k, t in after.items() if before.get(k) != t]


# -- helpers ---------------------------------------------------------------------------------


def _get(graph: Graph, task_id: str, what: str) -> Task:
    task = graph.get(task_id)
    if task is None:
        known = ", ".join(list(graph)[:20]) or "none"
        raise TaskError(f"no {what} {task_id!r} (tasks: {known})")
    return task


def _with_dependency(graph: dict[str, Task], task_id: str, dep: str) -> dict[str, Task]:
    task = graph[task_id]
    _get(graph, dep, "dependency")
    if dep == task_id:
        raise TaskError(f"task {task_id!r} cannot depend on itself")
    if dep in task.dependencies:
        raise TaskError(f"task {task_id!r} already depends on {dep!r}")
    if any(a.id == dep for a in ancestors(graph, task_id)):
        raise TaskError(f"task {task_id!r} cannot depend on {dep!r}, which contains it")
    graph[task_id] = dataclasses.replace(task, dependencies=(*task.dependencies, dep))
    if has_cycle(graph):
        raise TaskError(f"making {task_id!r} depend on {dep!r} would form a cycle")
    return graph


def _settle(graph: dict[str, Task], ids: Iterable[str]) -> dict[str, Task]:
    """Blocked iff an unfinished dependency, for the given tasks not started yet."""
    for task_id in ids:
        task = graph[task_id]
        if task.status not in OPEN:
            continue
        status = "blocked" if blockers(graph, task_id) else "pending"
        if status != task.status:
            graph[task_id] = dataclasses.replace(task, status=status)
    return graph


def _cancel_below(graph: dict[str, Task], task_id: str) -> dict[str, Task]:
    for t in descendants(graph, task_id):
        if t.status not in FINAL:
            graph[t.id] = dataclasses.replace(t, status="cancelled")
    return graph
