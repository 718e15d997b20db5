"""Accept and reject a proposal, whole or in part, and describe what is left.

    body = await describe(proposal, exists)                     # the GET body's "files"
    out = await decide(proposal, files, accept=["a.py::hunk:0", "n.ipynb::cell:c1"],
                       reject="all", reason="", who="alice (sidebar)")
    out["accepted"], out["rejected"], out["conflicts"], out["errors"], out["action_id"]

An id is a path, ``<path>::cell:<cell id>`` or ``<path>::hunk:<n>`` (hunks as :mod:`.diff`
numbers them in the current proposal). Accepting applies the picked part of the change
through ``files`` (the rooms, as ordinary attributed edits), three-way against the version
the agent based it on (the rewind's plan, :mod:`think_kernel.checkpoints.restore`, run
forwards): what a person typed since stays, and where they changed the same lines or cell the
file is left alone and the overlap is reported. A file a person deleted or renamed meanwhile is
reported, never brought back. What was accepted becomes the proposal's new base; rejecting
takes the part out of the proposal. Each decision is an action-log row (tool ``proposal``)
whose accepted changes are checkpoint steps of that row, so Undo on the row reverts them;
the model is told at its next request (:mod:`.notes`).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from ..checkpoints.restore import FilePlan, Step, plan_file
from ..checkpoints.rewind import FileAccess, _apply
from ..store.ids import new_id
from . import diff
from .proposal import Change, Proposal

CELL, HUNK = "::cell:", "::hunk:"


class BadDecision(ValueError):
    """The body of a decision is not one (400)."""


@dataclass
class _Pick:
    """What one decision picks of one file."""

    whole_accept: bool = False
    whole_reject: bool = False
    accept: set[str] = field(default_factory=set)  # cell ids, or hunk numbers as strings
    reject: set[str] = field(default_factory=set)
    ids: list[tuple[str, str]] = field(default_factory=list)  # (id, "accept" | "reject")


def split_id(item: str) -> tuple[str, str, str]:
    """``(path, "file" | "cell" | "hunk", part)`` of a decision id."""
    for mark, kind in ((CELL, "cell"), (HUNK, "hunk")):
        path, found, part = item.rpartition(mark)
        if found and path:
            return path, kind, part
    return item, "file", ""


def _text(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


async def describe(proposal: Proposal, exists: Any) -> list[dict[str, Any]]:
    """Each proposed file as the REST body shows it (diff, hunks, cells, missing);
    ``exists(path)`` says whether the live file is there (no room is loaded for it)."""
    out = []
    for change in await proposal.changes():
        try:
            live = bool(await asyncio.to_thread(exists, change.path))
        except OSError:
            live = False
        out.append(describe_one(change, not live and change.base is not None))
    return out


def describe_one(change: Change, missing: bool) -> dict[str, Any]:
    """One file of the GET body."""
    item: dict[str, Any] = {
        "path": change.path,
        "kind": change.kind,
        "status": change.status,
        "missing": missing,
        "diff": "",
        "hunks": [],
        "cells": [],
    }
    base, proposed = _text(change.base), _text(change.proposed)
    if change.kind == "notebook":
        try:
            cells = diff.notebook_cells(diff.parse(change.base), diff.parse(change.proposed))
        except ValueError:
            cells = []
        item["cells"] = [
            {
                "id": f"{change.path}{CELL}{c.cell_id}",
                "cell_id": c.cell_id,
                "status": c.status,
                "cell_type": c.cell_type,
                "base_source": c.base_source,
                "source": c.source,
                "source_diff": c.source_diff,
                "outputs_changed": c.outputs_changed,
                "index": c.index,
            }
            for c in cells
        ]
        return item
    if (change.base is not None and base is None) or (
        change.proposed is not None and proposed is None
    ):
        item["diff"] = f"Binary file {change.path} differs\n"
        return item
    item["diff"] = diff.unified(change.path, base, proposed)
    if base is not None and proposed is not None:
        item["hunks"] = [
            {"id": f"{change.path}{HUNK}{h.n}", "header": h.header, "lines": h.lines}
            for h in diff.text_hunks(base, proposed)
        ]
    return item


def _picks(
    changes: dict[str, Change], accept: list[str] | str, reject: list[str] | str
) -> tuple[dict[str, _Pick], list[dict[str, str]]]:
    picks: dict[str, _Pick] = {}
    errors: list[dict[str, str]] = []
    for verb, items in (("accept", accept), ("reject", reject)):
        if items == "all":
            items = list(changes)
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise BadDecision(f"'{verb}' must be a list of ids or \"all\"")
        for item in items:
            path, kind, part = split_id(item)
            change = changes.get(path)
            if change is None:
                errors.append({"id": item, "detail": f"no proposed change of {path!r}"})
                continue
            pick = picks.setdefault(path, _Pick())
            if kind == "file":
                setattr(pick, f"whole_{verb}", True)
            else:
                why = _check_part(change, kind, part)
                if why:
                    errors.append({"id": item, "detail": why})
                    continue
                getattr(pick, verb).add(part)
            pick.ids.append((item, verb))
    for path, pick in picks.items():
        both = (pick.whole_accept and (pick.whole_reject or pick.reject)) or (
            pick.whole_reject and pick.accept
        )
        if both or pick.accept & pick.reject:
            errors.append({"id": path, "detail": f"{path}: the same change accepted and rejected"})
            pick.ids = []
    return {p: k for p, k in picks.items() if k.ids}, errors


def _check_part(change: Change, kind: str, part: str) -> str:
    """Why a cell or hunk id does not name a part of this change ("" if it does)."""
    item = describe_one(change, False)
    if kind == "cell":
        if change.kind != "notebook":
            return f"{change.path} is not a notebook: decide it whole or by hunk"
        if part not in {c["cell_id"] for c in item["cells"]}:
            return f"no changed cell {part!r} in {change.path}"
        return ""
    if change.kind == "notebook":
        return f"{change.path} is a notebook: decide it whole or by cell"
    if not part.isdigit() or int(part) >= len(item["hunks"]):
        n = len(item["hunks"])
        return f"no hunk {part!r} in {change.path} ({n} hunk{'s' if n != 1 else ''}: 0..{n - 1})"
    return ""


def _targets(change: Change, pick: _Pick) -> tuple[bytes | None, bytes | None]:
    """What accepting brings the file to, and what stays proposed after the rejections."""
    base, proposed = change.base, change.proposed
    if pick.whole_reject:
        target = proposed if pick.whole_accept else base
        return target, target
    if pick.whole_accept:
        return proposed, proposed
    if change.kind == "notebook":
        b, p = diff.parse(base), diff.parse(proposed)
        assert p is not None
        all_ids = {c.cell_id for c in diff.notebook_cells(b, p)}
        target = diff.dumps(diff.apply_cells(b, p, pick.accept)) if pick.accept else base
        if not pick.reject:
            return target, proposed
        kept = diff.apply_cells(b, p, all_ids - pick.reject)
        assert kept is not None
        return target, diff.dumps(dict(p, cells=kept["cells"]))
    b_text, p_text = _text(base) or "", _text(proposed) or ""
    hunks = {str(h.n) for h in diff.text_hunks(b_text, p_text)}
    target = diff.apply_hunks(b_text, p_text, {int(n) for n in pick.accept}).encode()
    if not pick.accept:
        target = base
    if not pick.reject:
        return target, proposed
    kept_t = diff.apply_hunks(b_text, p_text, {int(n) for n in hunks - pick.reject})
    return target, kept_t.encode()


def _detail(path: str, conflict: dict[str, Any]) -> str:
    where = f" (cell {conflict['cell']})" if conflict.get("cell") else ""
    lines = conflict.get("lines")
    if lines:
        spans = ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in lines)
        where += f" lines {spans}"
    reason = str(conflict.get("reason") or "")
    if "deleted since" in reason:
        return f"{path} was deleted or renamed since the agent read it: not brought back"
    if "made again" in reason:
        return f"{path} was created since by someone else: left as it is"
    return f"{path}{where}: changed since by someone else in the same place; left as it is"


async def decide(
    proposal: Proposal,
    files: FileAccess,
    accept: list[str] | str = (),  # type: ignore[assignment]
    reject: list[str] | str = (),  # type: ignore[assignment]
    reason: str = "",
    who: str = "",
) -> dict[str, Any]:
    """Apply a decision (see the module doc); :class:`BadDecision` for a malformed one."""
    accept = list(accept) if isinstance(accept, tuple) else accept
    reject = list(reject) if isinstance(reject, tuple) else reject
    changes = {c.path: c for c in await proposal.changes()}
    picks, errors = _picks(changes, accept, reject)
    out: dict[str, Any] = {"accepted": [], "rejected": [], "conflicts": [], "errors": errors}
    store, sid = proposal.store, proposal.session_id
    aid = new_id("pa_")
    if hasattr(files, "action_id"):
        files.action_id = aid  # the rooms attribute the edits to the decision
    plans: list[FilePlan] = []
    bases: dict[str, str | None] = {}
    currents: dict[str, bytes | None] = {}
    updates: list[tuple[str, bytes | None, bytes | None, list[tuple[str, str]]]] = []
    for path, pick in sorted(picks.items()):
        change = changes[path]
        try:
            target, kept = _targets(change, pick)
            if change.kind == "notebook" and target is not None:
                diff.parse(target)  # never written into a room when it is no notebook
        except ValueError:
            why = f"{path}: the proposed notebook is not valid notebook JSON; reject it"
            for i, verb in pick.ids:
                if verb == "accept":
                    out["conflicts"].append({"id": i, "path": path, "detail": why})
            if any(verb == "accept" for _, verb in pick.ids):
                continue
            target, kept = change.base, change.base  # a rejection needs no parsing
        accepting = [i for i in pick.ids if i[1] == "accept"]
        if accepting and target != change.base:
            try:
                current, text = await files.current(path)
            except OSError as e:
                why = f"{path} is not a regular file now ({e.strerror or e}): nothing written"
                out["conflicts"] += [{"id": i, "path": path, "detail": why} for i, _ in accepting]
                continue
            if change.base is not None and current is None:
                why = (
                    f"{path} no longer exists: it was deleted or renamed since the agent read "
                    "it. Nothing was written; reject this change, or put the file back and "
                    "accept again."
                )
                out["conflicts"] += [{"id": i, "path": path, "detail": why} for i, _ in accepting]
                continue
            plan = plan_file(path, [Step(pre=target, post=change.base)], current)
            if plan.conflicts:
                details = sorted({_detail(path, c) for c in plan.conflicts})
                for i, _ in accepting:
                    out["conflicts"].append({"id": i, "path": path, "detail": "; ".join(details)})
                continue
            plans.append(plan)
            bases[path], currents[path] = text, current
        updates.append((path, target, kept, pick.ids))
    applied: dict[str, Any] = {"restored": [], "deleted": [], "conflicts": []}
    if plans:
        await _apply(store, files, sid, aid, plans, bases, currents, applied)
        # The accept's changes are steps of its own row: Undo on the row reverts them.
        await store._write(
            "UPDATE checkpoint_steps SET call_id = ? WHERE checkpoint_id IN"
            " (SELECT id FROM checkpoints WHERE session_id = ? AND message_id = ?)",
            (aid, sid, aid),
        )
    for path, target, kept, ids in updates:
        await proposal.set(path, target, kept)
        for item, verb in ids:
            out["accepted" if verb == "accept" else "rejected"].append(item)
    if out["accepted"] or out["rejected"]:
        await _log(store, sid, aid, out, applied, reason, who)
        out["action_id"] = aid
    return out


def _summary(out: dict[str, Any], applied: dict[str, Any]) -> str:
    parts = []
    if applied["restored"] or applied["deleted"]:
        parts.append("wrote " + ", ".join(applied["restored"] + applied["deleted"]))
    if out["rejected"]:
        parts.append("rejected " + ", ".join(out["rejected"]))
    if out["conflicts"]:
        parts.append("conflicts: " + ", ".join(c["id"] for c in out["conflicts"]))
    return "; ".join(parts) or "no file changed"


async def _log(
    store: Any,
    sid: str,
    aid: str,
    out: dict[str, Any],
    applied: dict[str, Any],
    reason: str,
    who: str,
) -> None:
    """The action-log row of the decision, and the note that tells the model."""
    from .notes import add_note

    verb = "accept" if out["accepted"] else "reject"
    said = []
    if out["accepted"]:
        said.append("accepted " + ", ".join(out["accepted"]))
    if out["rejected"]:
        said.append("rejected " + ", ".join(out["rejected"]))
    head = "; ".join(said) + (f" (by {who})" if who else "")
    await store.log_actions(
        [
            {
                "id": aid,
                "session_id": sid,
                "tool": "proposal",
                "action": verb,
                "call_id": aid if applied["restored"] or applied["deleted"] else None,
                "input_summary": head + (f"; reason: {reason}" if reason else ""),
                "output_summary": _summary(out, applied),
                "success": True,
                "ts": time.time(),
            }
        ]
    )
    await add_note(store, sid, out, reason, who)
