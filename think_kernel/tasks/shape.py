"""Stored task rows -> the task objects clients see, their tree, and a Markdown view (pure).

    graph = graph_of(rows)                      # id -> graph.Task
    objs = objects(rows)                        # flat task objects, with depth and progress
    {"tasks": nest(objs), "progress": overall}  # GET .../tasks
    markdown(objs)                              # the cell's task tree, %think_tasks

A task object (the contract with the sidebar): ``{id, session_id, parent_id, title,
description, type, status, dependencies, result, error, depth, progress, subagent: null |
{status, model, started_at, ended_at}, message_id, created_at, updated_at}``; ``progress``
is its subtree's (:func:`think_kernel.tasks.graph.progress`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from . import graph as G

BAR_CELLS = 10
#: One mark per status, in every text font (no emoji: some systems have no font for them).
MARKS = {
    "pending": "○",
    "blocked": "⊘",
    "in_progress": "◐",
    "complete": "✓",
    "failed": "✗",
    "cancelled": "–",
}


def to_task(row: dict[str, Any]) -> G.Task:
    """The graph's view of a stored row."""
    deps = row.get("dependencies")
    return G.Task(
        id=str(row["id"]),
        title=str(row.get("title") or ""),
        type=str(row.get("type") or "code"),
        status=str(row.get("status") or "pending"),
        parent_id=row.get("parent_id"),
        dependencies=tuple(str(d) for d in deps) if isinstance(deps, list) else (),
        description=str(row.get("description") or ""),
        result=row.get("result"),
        error=row.get("error"),
    )


def graph_of(rows: Iterable[dict[str, Any]]) -> dict[str, G.Task]:
    """The graph of stored rows (creation order kept); rows whose parent or dependency is
    missing (a damaged store) are kept as roots without those links."""
    graph: dict[str, G.Task] = {}
    for row in rows:
        task = to_task(row)
        parent = task.parent_id if task.parent_id in graph else None
        deps = tuple(d for d in task.dependencies if d in graph)
        graph[task.id] = dataclasses.replace(task, parent_id=parent, dependencies=deps)
    return graph


def subagent(row: dict[str, Any]) -> dict[str, Any] | None:
    """The ``subagent`` field of a task object."""
    if not row.get("subagent_status"):
        return None
    return {
        "status": row["subagent_status"],
        "model": row.get("subagent_model") or "",
        "started_at": row.get("subagent_started_at"),
        "ended_at": row.get("subagent_ended_at"),
    }


def objects(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Task objects of stored rows, in creation order (any number of requests)."""
    graph = graph_of(rows)
    progress = G.progress_all(graph)
    out = []
    for row in rows:
        task = graph[str(row["id"])]
        out.append(
            {
                "id": task.id,
                "session_id": row.get("session_id"),
                "parent_id": task.parent_id,
                "title": task.title,
                "description": task.description,
                "type": task.type,
                "status": task.status,
                "dependencies": list(task.dependencies),
                "result": task.result,
                "error": task.error,
                "depth": G.depth(graph, task.id),
                "progress": round(progress[task.id], 4),
                "subagent": subagent(row),
                "message_id": row.get("message_id"),
                "created_at": row.get("created_at"),
                "updated_at": row.get("updated_at"),
            }
        )
    return out


def nest(objs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Root task objects, each with ``children`` (recursively), in creation order."""
    by_id = {o["id"]: {**o, "children": []} for o in objs}
    tops: list[dict[str, Any]] = []
    for o in objs:
        node = by_id[o["id"]]
        parent = by_id.get(o["parent_id"]) if o["parent_id"] else None
        (parent["children"] if parent is not None else tops).append(node)
    return tops


def overall(objs: Sequence[dict[str, Any]]) -> float:
    """Progress of all the roots together (their mean; 0 without tasks)."""
    tops = [o for o in objs if not o["parent_id"]]
    return round(sum(o["progress"] for o in tops) / len(tops), 4) if tops else 0.0


def bar(progress: float, cells: int = BAR_CELLS) -> str:
    """A text progress bar, e.g. ``▰▰▰▱▱▱▱▱▱▱ 30%``."""
    p = min(1.0, max(0.0, progress))
    full = round(p * cells)
    return "▰" * full + "▱" * (cells - full) + f" {p:.0%}"


def markdown(objs: Sequence[dict[str, Any]], title: str = "Tasks") -> str:
    """The task tree as Markdown: one line per task (mark, title, type, status, progress,
    its subagent), indented by depth."""
    if not objs:
        return ""
    lines = [f"**{title}** · {bar(overall(objs))}", ""]
    by_id = {o["id"]: o for o in objs}
    for node in _walk(nest(objs)):
        mark = MARKS.get(node["status"], "?")
        head = f"{mark} **{_text(node['title'])}** `{node['type']}` · {node['status']}"
        if node["children"]:
            head += f" · {bar(node['progress'])}"
        waiting = [
            by_id[d]["title"]
            for d in node["dependencies"]
            if d in by_id and by_id[d]["status"] != "complete"
        ]
        if waiting and node["status"] == "blocked":
            head += f" · waits for {', '.join(_text(w) for w in waiting)}"
        agent = node.get("subagent")
        if agent:
            head += f" · subagent {agent['status']}"
        note = node["error"] if node["status"] in ("failed", "cancelled") else node["result"]
        if note:
            head += f" — {_text(_clip(str(note), 100))}"
        lines.append(f"{'  ' * node['depth']}- {head}")
    return "\n".join(lines) + "\n"


def _walk(nodes: list[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    for node in nodes:
        yield node
        yield from _walk(node["children"])


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _text(text: str) -> str:
    """Plain text inside Markdown: no emphasis or links by accident."""
    for ch in "\\`*_[]<>|":
        text = text.replace(ch, "\\" + ch)
    return text
