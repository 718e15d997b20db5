"""Skills and project instructions end to end: a chat (real server with jupyter-collaboration,
real think kernels and sandbox; only the model is scripted) writes a skill, a person approves
it over REST, and another session in a fresh kernel finds it, loads it, and follows AGENTS.md
edits at its next request.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.waiting import until

from .test_files_e2e import chat, jp_server_config  # noqa: F401  (the fixtures)

pytestmark = pytest.mark.timeout(300)

SKILL = """\
---
name: csv-tips
description: How to read the team's CSV exports (semicolons, decimal commas).
---
Read the exports with pandas.read_csv(path, sep=";", decimal=",").
"""
BAD = "---\nname: bad-skill\n---\nNo description.\n"


def _system(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


def _last_user(body: dict[str, Any]) -> str:
    users = [m for m in body["messages"] if m["role"] == "user"]
    content = users[-1]["content"]
    return content if isinstance(content, str) else json.dumps(content)


async def _turn(session: Any, sid: str, tab: Any, text: str) -> None:
    done = len(tab.of("task_complete"))
    await session.send(sid, text)
    await until(lambda: len(tab.of("task_complete")) > done, 120, f"the run of {text!r}")


async def test_a_skill_written_in_one_session_is_loaded_in_another(
    chat,  # noqa: F811
    model_env,
    jp_root_dir,
    jp_fetch,
):
    # Session A writes the skill; the default policy asks, the card shows SKILL.md.
    path = ".think/skills/csv-tips/SKILL.md"
    model_env.reply(tool_calls=[("write_file", {"path": path, "content": SKILL})])
    model_env.reply(text="Saved the csv-tips skill.")
    a, tab_a = await chat.session()
    await chat.send(a, "save what you learnt about our CSV exports as a skill")
    asked = (await until(lambda: tab_a.of("approval_requested"), 120, "the approval"))[0]
    assert asked["tool"] == "write_file"
    assert asked["summary"] == f"create skill 'csv-tips' ({path})"
    assert '+Read the exports with pandas.read_csv(path, sep=";", decimal=",").' in asked["diff"]
    assert not (jp_root_dir / path).exists()
    await jp_fetch(
        "api", "think", "sessions", a, "approvals", asked["id"],
        method="POST", body=json.dumps({"decision": "approve"}),
    )  # fmt: skip
    await until(lambda: tab_a.of("task_complete"), 120, "session A's run")
    assert (jp_root_dir / path).read_text() == SKILL

    # An invalid skill beside it, and project instructions.
    (jp_root_dir / ".think" / "skills" / "bad-skill").mkdir()
    (jp_root_dir / ".think" / "skills" / "bad-skill" / "SKILL.md").write_text(BAD)
    (jp_root_dir / "AGENTS.md").write_text("Answer in French.\n")

    # Session B, its own fresh kernel: the catalog is in its prompt, it loads the skill.
    b, tab_b = await chat.session()
    resp = await jp_fetch("api", "think", "skills", params={"session": b})
    report = json.loads(resp.body)
    assert [(s["name"], s["source"]) for s in report["skills"]["loaded"]] == [
        ("csv-tips", "workspace")
    ]
    [bad] = report["skills"]["invalid"]
    assert (
        bad["name"] == "bad-skill"
        and bad["reason"] == "'description' is missing from the front matter"
    )
    assert [f["path"] for f in report["instructions"]["loaded"]] == ["AGENTS.md"]

    before = len(model_env.requests)
    model_env.reply(tool_calls=[("load_skill", {"name": "csv-tips"})])
    model_env.reply(text="Lisez-le avec sep=';'.")
    await _turn(chat, b, tab_b, "how do I read sales.csv?")
    first, second = model_env.requests[before : before + 2]
    assert "- csv-tips: How to read the team's CSV exports" in _system(first)
    assert "bad-skill" not in _system(first)
    assert "Answer in French." in _system(first)
    [result] = [f for f in tab_b.of("tool_result") if f["name"] == "load_skill"]
    tool_msgs = [m for m in second["messages"] if m["role"] == "tool"]
    assert 'pandas.read_csv(path, sep=";", decimal=",")' in str(tool_msgs[-1]["content"])
    assert ".think/skills/csv-tips/" in str(tool_msgs[-1]["content"]), result

    # AGENTS.md edits apply at the next request, with no restart.
    (jp_root_dir / "AGENTS.md").write_text("Answer in German.\n")
    before = len(model_env.requests)
    model_env.reply(text="Gut.")
    await _turn(chat, b, tab_b, "and now?")
    system = _system(model_env.requests[before])
    assert "Answer in German." in system and "French" not in system

    # "/name" at the start of a message attaches that skill's instructions to the request.
    before = len(model_env.requests)
    model_env.reply(text="Done.")
    await _turn(chat, b, tab_b, "/csv-tips summarise sales.csv")
    asked_for = _last_user(model_env.requests[before])
    assert asked_for.startswith("summarise sales.csv")
    assert 'sep=";", decimal=","' in asked_for
