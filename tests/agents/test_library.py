"""Agent type files: parsing, the places searched, bad files reported by name and reason,
and workspace types used only once a person approved their content."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest

from think_kernel.agents import (
    AgentLibrary,
    InvalidAgentType,
    SessionAgents,
    UnknownAgentType,
    parse_agent_type,
)
from think_kernel.approvals import decide, decision_record
from think_kernel.skills.trust import SkillTrust, ask_review
from think_kernel.store import Store

REVIEWER = """---
name: reviewer
description: Reviews, never edits.
tools:
  allow: [read_file, "list_*"]
  deny: [list_versions]
model: fast
approval_policy: strict
skills: [code-review]
---
Review carefully.
"""


def write_type(folder: Path, name: str, text: str) -> Path:
    """An agent type file ``<folder>/<name>.md``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text)
    return path


def library(ws: Path, tmp_path: Path, **kw: object) -> AgentLibrary:
    """The library of ``ws`` with an empty user folder and no packages."""
    return AgentLibrary(ws, user_dir=tmp_path / "user-agents", packages=list, **kw)  # type: ignore[arg-type]


def test_parse_a_complete_type() -> None:
    kind = parse_agent_type("reviewer", REVIEWER, source="workspace", where="x")
    assert kind.description == "Reviews, never edits."
    assert kind.limits.allows("read_file") and kind.limits.allows("list_files")
    assert not kind.limits.allows("list_versions")  # denied after being allowed
    assert not kind.limits.allows("write_file")
    assert (kind.model, kind.model_role, kind.approval_policy) == ("fast", "fast", "strict")
    assert kind.skills == ("code-review",) and kind.instructions == "Review carefully."


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no front matter", "no front matter"),
        ("---\nname: other\ndescription: d\n---\n", "does not match its file name"),
        ("---\nname: t\n---\n", "'description' is missing"),
        ("---\nname: t\ndescription: d\ntools: 3\n---\n", "'tools' must be"),
        ("---\nname: t\ndescription: d\ntools: {only: [a]}\n---\n", "only allow and deny"),
        ("---\nname: t\ndescription: d\napproval_policy: yolo\n---\n", "'approval_policy'"),
        ("---\nname: t\ndescription: d\ncolour: red\n---\n", "unknown key colour"),
        ("---\nname: t\ndescription: [d\n---\n", "invalid YAML"),
    ],
)
def test_bad_files_say_why(text: str, reason: str) -> None:
    with pytest.raises(InvalidAgentType, match=reason):
        parse_agent_type("t", text, source="workspace", where="x")


def test_builtins_and_a_bad_file_reported_by_name(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_type(ws / ".think" / "agents", "broken", "---\nname: broken\n---\n")
    scan = library(ws, tmp_path, trust=SkillTrust(trust_all=True)).scan()
    assert {"general", "explorer", "reviewer"} <= set(scan.types)
    assert scan.types["explorer"].kind.source == "builtin"
    assert not scan.types["explorer"].kind.limits.allows("write_file")
    assert not scan.types["explorer"].kind.limits.allows("bash")
    reviewer = scan.types["reviewer"].kind.limits
    assert reviewer.allows("bash") and not reviewer.allows("write_file")
    assert scan.types["general"].kind.limits.unlimited
    (bad,) = scan.report.invalid
    assert (bad.name, bad.path) == ("broken", ".think/agents/broken.md")
    assert "'description' is missing" in bad.reason


def test_user_type_overrides_builtin_and_a_link_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    write_type(tmp_path / "user-agents", "explorer", REVIEWER.replace("reviewer", "explorer"))
    outside = write_type(tmp_path / "elsewhere", "linked", REVIEWER.replace("reviewer", "linked"))
    (ws / ".think" / "agents").mkdir(parents=True)
    (ws / ".think" / "agents" / "linked.md").symlink_to(outside)
    scan = library(ws, tmp_path, trust=SkillTrust(trust_all=True)).scan()
    assert scan.types["explorer"].kind.source == "user"
    assert "linked" not in scan.types
    assert any(p.name == "linked" and "link" in p.reason for p in scan.report.invalid)


async def test_a_workspace_type_waits_for_a_person(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    path = write_type(ws / ".think" / "agents", "reviewer", REVIEWER.replace("Review", "Be lax"))
    agents = SessionAgents(library(ws, tmp_path))
    store = await Store.open(tmp_path / "store" / "think.db")
    try:
        session = await store.create_session()
        await agents.check_trust(store)
        # Not approved: the built-in reviewer is used, the workspace file waits for review.
        assert agents.find("reviewer").source == "builtin"
        scan = agents.scan()
        (waiting,) = scan.report.review
        assert waiting.path == ".think/agents/reviewer.md" and "needs review" in waiting.reason
        write_type(ws / ".think" / "agents", "mine", REVIEWER.replace("reviewer", "mine"))
        await agents.check_trust(store)
        with pytest.raises(UnknownAgentType, match="waits for a person's review"):
            agents.find("mine")

        data = await asyncio.to_thread(path.read_bytes)
        sha = hashlib.sha256(data).hexdigest()
        row, _ = await ask_review(
            store, session["id"], waiting.path, "reviewer", sha, data.decode()
        )
        assert await decide(store, row, decision_record("approve", source="sidebar", user="ada"))
        await agents.check_trust(store)
        kind = agents.find("reviewer")
        assert kind.source == "workspace" and kind.instructions.startswith("Be lax")

        path.write_text(REVIEWER.replace("Review", "Be laxer"))  # a change needs a person again
        await agents.check_trust(store)
        assert agents.find("reviewer").source == "builtin"
    finally:
        await store.close()
