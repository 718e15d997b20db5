"""Switching branches with the files: the conversation and the files both go to another
branch's line.

    out = await switch_with_files(store, files, sid, branch_id)
    out["restored"], out["deleted"], out["conflicts"], out["branch"], out["left"]

Composed from the rewind's parts: the steps the current branch's turns made after the point
the two lines share are undone (newest first), then the target branch's steps after that
point are made again (oldest first), each merged three-way into what is there now
(:mod:`.restore`), so a person's typing elsewhere stays and an overlap is reported, not
overwritten. The plan goes through the rewind journal first (a crash finishes it, branch
switch included), is one action-log row (tool ``rewind``, action ``switch``) and can be
undone with ``{"undo": rewind_id}`` like a rewind.
"""

from __future__ import annotations

import time
from typing import Any

from . import journal
from .blobs import Blobs
from .records import StepRow, steps_by_path
from .restore import FilePlan, Step, plan_to, undo_step
from .rewind import FileAccess, _apply, _blob, summary


async def _line_steps(store: Any, message_ids: list[str]) -> dict[str, list[StepRow]]:
    """The steps the checkpoints of these user messages recorded, by path, oldest first."""
    out: dict[str, list[StepRow]] = {}
    for mid in message_ids:
        rows = await store._all(
            "SELECT s.* FROM checkpoint_steps s JOIN checkpoints c ON c.id = s.checkpoint_id"
            " WHERE c.message_id = ? ORDER BY s.id",
            (mid,),
        )
        steps_by_path(rows, out)
    return out


def _own_turns(line: list[dict[str, Any]], shared: set[str]) -> list[str]:
    """The user messages of a line after the part it shares with another, oldest first."""
    return [m["id"] for m in line if m["id"] not in shared and m["role"] == "user"]


def plan_switch(path: str, undo: list[Step], redo: list[Step], current: bytes | None) -> FilePlan:
    """Undo ``undo`` (oldest first) newest first, then make ``redo`` (oldest first) again."""
    state = current
    conflicts: list[dict[str, Any]] = []
    for step in reversed(undo):
        if not step.known:
            why = "its content before the change was not recorded (code changed it unseen)"
            conflicts.append({"path": path, "reason": why})
            continue
        state, found = undo_step(path, step, state)
        conflicts.extend(found)
    for step in redo:
        if state == step.post:  # already as the other branch left it
            continue
        # Making a change again is undoing its reverse.
        state, found = undo_step(path, Step(step.post, step.pre, step.known), state)
        conflicts.extend(found)
    return plan_to(path, state, current, conflicts)


async def switch_with_files(
    store: Any, files: FileAccess, session_id: str, branch_id: str
) -> dict[str, Any]:
    """Make ``branch_id`` current and take the files to its line's state (see the module
    doc). :class:`~think_kernel.store.branches.BranchNotFound` for an unknown branch."""
    await store.get_branch(session_id, branch_id)
    for row in await journal.pending(store, session_id):  # a rewind a crash cut short
        await journal.complete(store, files, row)
    here = await store.branch_messages(session_id)
    there = await store.branch_messages(session_id, branch_id)
    shared = {m["id"] for m in here} & {m["id"] for m in there}
    undo = await _line_steps(store, _own_turns(here, shared))
    redo = await _line_steps(store, _own_turns(there, shared))
    blobs = Blobs.beside(store)
    plans: list[FilePlan] = []
    bases: dict[str, str | None] = {}
    currents: dict[str, bytes | None] = {}
    for path in sorted(set(undo) | set(redo)):
        steps = [
            [
                Step(
                    await _blob(blobs, r.pre_exists, r.pre_blob),
                    await _blob(blobs, r.post_exists, r.post_blob),
                    r.known,
                )
                for r in rows
            ]
            for rows in (undo.get(path, []), redo.get(path, []))
        ]
        try:
            current, bases[path] = await files.current(path)
            currents[path] = current
        except OSError as e:  # a link, a folder, a FIFO: never written through
            why = f"not a regular file now ({e.strerror or e}): left alone"
            plans.append(FilePlan(path, "keep", conflicts=[{"path": path, "reason": why}]))
            continue
        plans.append(plan_switch(path, steps[0], steps[1], current))
    # The plan is stored before anything changes: a crash from here on is finished later.
    rid = await journal.begin(
        store, blobs, session_id, branch_id, "switch", plans, journal.files_root(files)
    )
    out: dict[str, Any] = {"restored": [], "deleted": [], "conflicts": [], "rewind_id": rid}
    await _apply(store, files, session_id, rid, plans, bases, currents, out)
    out.update(await store.switch_branch(session_id, branch_id))
    line = summary(out)
    await store.log_actions(
        [
            {
                "id": rid,
                "session_id": session_id,
                "tool": "rewind",
                "action": "switch",
                "input_summary": f"switch to branch {branch_id} with its files",
                "output_summary": line if out["restored"] or out["deleted"] else "no file changed",
                "success": True,
                "ts": time.time(),
            }
        ]
    )
    await journal.finish(store, rid)
    return out


__all__ = ["plan_switch", "switch_with_files"]
