"""Which workspace skills a person trusts: a ``.think/skills/<name>/SKILL.md`` reaches the
model only once a person approved its exact content (sha256), as a self-written tool does.

    trust = SkillTrust()
    await trust.refresh(store, [(".think/skills/csv-tips/SKILL.md", sha)])   # each request
    trust.verdict(".think/skills/csv-tips/SKILL.md", sha)    # Verdict(True, ...) or None

Sandboxed code may write anywhere in the workspace, and the policy lets ``bash`` and
``execute_code`` run without asking, so a skill that appears there proves nothing about who
wrote it; one the catalog offered would steer every later request of every session. The
approval is an ordinary row of the ``approvals`` table keyed ``skill-file:<path>:<sha256>``
(:func:`trust_key`), decided through the approvals route (the sidebar's Skills area shows the
skill and asks), or recorded when a person approved the file tool's call that wrote exactly
that content (:func:`trust_written_skill`). A new content is a new key: every change of the
file needs a person again. Skills of the user's Think folder and of installed packages are
trusted as they are: a person or an administrator put them there.

A decision is final for its content, so verdicts are cached for the kernel's life; a content
nobody decided yet costs one store query per request until someone does.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store import Store

#: The ``tool`` of the approval rows (the card's title in the sidebar).
TRUST_TOOL = "trust_skill"
#: Closings that are no person's verdict: a run that was cancelled, a wait that ran out.
NOT_A_VERDICT = frozenset({"cancel", "timeout"})
#: A workspace skill's instructions, relative to the workspace root.
SKILL_FILE = re.compile(r"^\.think/skills/([^/]+)/SKILL\.md$")


def content_hash(data: bytes) -> str:
    """The sha256 of a SKILL.md's bytes (hex)."""
    return hashlib.sha256(data).hexdigest()


def trust_key(path: str, sha256: str) -> str:
    """The ``call_id`` of the approval of one content of one skill file."""
    return f"skill-file:{path}:{sha256}"


@dataclass(frozen=True)
class Verdict:
    """What a person decided about one content of a skill file."""

    approved: bool
    reason: str = ""
    user: str = ""


def verdict_of(row: dict[str, Any] | None) -> Verdict | None:
    """The verdict a decided approval row holds (None: pending, or closed by no person)."""
    if row is None or row.get("status") not in ("approved", "rejected"):
        return None
    record = row.get("decision") or {}
    if not isinstance(record, dict) or record.get("source") in NOT_A_VERDICT:
        return None
    return Verdict(
        row["status"] == "approved", str(record.get("reason") or ""), str(record.get("user") or "")
    )


class SkillTrust:
    """The verdicts on workspace skill contents one process has learnt (cached: final)."""

    def __init__(self, trust_all: bool = False) -> None:
        #: ``c.SkillsConfig.trust_workspace_skills``: every content counts as approved.
        self.trust_all = trust_all
        self._verdicts: dict[str, Verdict] = {}

    def verdict(self, path: str, sha256: str) -> Verdict | None:
        """The verdict on that content as last learnt (no store query), or None."""
        if self.trust_all:
            return Verdict(True, "c.SkillsConfig.trust_workspace_skills is set")
        return self._verdicts.get(trust_key(path, sha256))

    def note(self, path: str, sha256: str, verdict: Verdict) -> None:
        """Remember a verdict this process recorded or saw recorded."""
        self._verdicts[trust_key(path, sha256)] = verdict

    async def refresh(self, store: Store, contents: Iterable[tuple[str, str]]) -> None:
        """Learn the verdicts on ``(path, sha256)`` contents not decided yet."""
        if self.trust_all:
            return
        for path, sha in contents:
            key = trust_key(path, sha)
            if key in self._verdicts:
                continue
            found = verdict_of(await store.decided_approval(key))
            if found is not None:
                self._verdicts[key] = found


def review_reason(verdict: Verdict | None) -> str:
    """Why a workspace skill is not offered, for the sidebar and ``%think_status``."""
    if verdict is None:
        return (
            "needs review: new or changed since a person approved it; not offered to the "
            "model until a person approves this content"
        )
    who = f" ({verdict.user})" if verdict.user else ""
    why = f": {verdict.reason}" if verdict.reason else ""
    return f"rejected{who}{why}; change the file to ask again"


def review_diff(path: str, text: str) -> str:
    """The whole SKILL.md as a diff from nothing: what the card shows the person."""
    lines = text.splitlines()
    head = f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n"
    return head + "".join(f"+{line}\n" for line in lines)


async def ask_review(
    store: Store, session_id: str, path: str, name: str, sha256: str, text: str
) -> tuple[dict[str, Any], bool]:
    """The pending approval of one content of a skill in a session (made once); and whether
    this call made it."""
    key = trust_key(path, sha256)
    existing = await store.approval_for_call(session_id, key)
    if existing is not None:
        return existing, False
    row = await store.create_approval(
        session_id,
        "",
        key,
        TRUST_TOOL,
        {"path": path, "name": name, "sha256": sha256},
        summary=f"trust skill {name!r} ({path})",
        diff=review_diff(path, text),
        expires_at=None,
    )
    return row, True


# -- the file tools' approval counts as the skill's ---------------------------------------------

#: The replaced text of a skill file that could not be read: never trusted.
UNREADABLE = "\x00unreadable"


async def replaced_text(ctx: Any, rel: str) -> str | None:
    """The text a write of ``rel`` replaces, when it is a workspace SKILL.md (None: no file,
    or not a skill file)."""
    if not SKILL_FILE.match(rel):
        return None
    try:
        return str(await ctx.workspace.read_text(rel))
    except FileNotFoundError:
        return None
    except Exception:  # unreadable (not UTF-8, a link): whatever it was, it is not trusted
        return UNREADABLE


async def trust_written_skill(ctx: Any, rel: str, before: str | None, after: str) -> None:
    """After a file tool wrote a workspace SKILL.md: trust the text written when a person
    approved this very call and the text it replaced was trusted too (or there was none).

    The card showed the call as a diff against the file: had the file held an unreviewed
    content, its unchanged lines would have reached the catalog unseen. Edited arguments are
    what the tool wrote, so they are what is trusted.
    """
    store: Store | None = ctx.store
    match = SKILL_FILE.match(rel)
    if store is None or match is None:
        return
    row = await store.approval_for_call(ctx.session_id, ctx.call_id)
    if row is None or row["status"] != "approved" or row.get("kind") != "approval":
        return
    approval = verdict_of(row)
    if approval is None:
        return
    skills = getattr(ctx.services, "skills", None)
    trust: SkillTrust | None = getattr(getattr(skills, "library", None), "trust", None)
    if before is not None:
        try:
            old = content_hash(before.encode("utf-8"))
        except UnicodeEncodeError:
            return
        known = trust.verdict(rel, old) if trust is not None else None
        known = known or verdict_of(await store.decided_approval(trust_key(rel, old)))
        if known is None or not known.approved:
            return
    sha = content_hash(after.encode("utf-8"))
    pending, _ = await ask_review(store, ctx.session_id, rel, match.group(1), sha, after)
    from ..approvals.record import decide, decision_record

    record = decision_record(
        "approve",
        reason=f"approved with the {row['tool']} call that wrote it ({row['id']})",
        source=str((row.get("decision") or {}).get("source") or "api"),
        user=approval.user,
    )
    if pending["status"] == "pending":
        await decide(store, pending, record)
    found = verdict_of(await store.get_approval(pending["id"]))
    if trust is not None and found is not None:
        trust.note(rel, sha, found)
