"""Agent types over REST: the list, a bad file reported by name and reason, a chat created
or changed with a type, a workspace type approved through the approvals route."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def no_user_types(jp_data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user-level Think folder is the test's own (empty)."""
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(jp_data_dir))


def write_type(root: Path, name: str, text: str) -> None:
    folder = root / ".think" / "agents"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(text)


async def test_list_types_and_report_a_bad_file(api, jp_root_dir: Path) -> None:
    write_type(jp_root_dir, "broken", "---\nname: broken\ntools: 7\n---\n")
    code, body = await api("GET", "agents")
    assert code == 200 and body["default"] == "general"
    by_name = {a["name"]: a for a in body["agents"]}
    assert {"general", "explorer", "reviewer"} <= set(by_name)
    assert by_name["explorer"]["tools"]["allow"] and "write_file" not in str(
        by_name["explorer"]["tools"]
    )
    assert by_name["general"]["tools"] == {"allow": None, "deny": []}
    (bad,) = body["invalid"]
    assert bad["name"] == "broken" and bad["path"] == ".think/agents/broken.md"
    assert "'description' is missing" in bad["reason"]


async def test_create_and_change_a_chat_type(api) -> None:
    code, s = await api("POST", "sessions", {"title": "review", "agent": "reviewer"})
    assert code == 201 and s["options"] == {"agent": "reviewer"}
    code, body = await api("GET", "agents", session=s["id"])
    assert code == 200 and body["current"] == "reviewer"
    code, err = await api("POST", "sessions", {"agent": "nope"})
    assert code == 400 and "no usable agent type 'nope'" in err["message"]
    code, err = await api("POST", "sessions", {"agent": 3})
    assert code == 400
    code, got = await api("PATCH", f"sessions/{s['id']}", {"agent": "explorer"})
    assert code == 200 and got["options"]["agent"] == "explorer"
    code, got = await api("PATCH", f"sessions/{s['id']}", {"agent": None})
    assert code == 200 and "agent" not in got["options"]
    code, body = await api("GET", "agents", session=s["id"])
    assert body["current"] == "general"


async def test_a_workspace_type_is_chosen_once_a_person_approved_it(api, jp_root_dir: Path) -> None:
    write_type(
        jp_root_dir,
        "docs-writer",
        "---\nname: docs-writer\ndescription: Writes docs.\n---\nWrite.\n",
    )
    _, s = await api("POST", "sessions", {})
    code, err = await api("PATCH", f"sessions/{s['id']}", {"agent": "docs-writer"})
    assert code == 400 and "waits for a person's review" in err["message"]
    code, body = await api("GET", "agents", session=s["id"])
    (review,) = body["review"]
    assert review["name"] == "docs-writer" and "Write." in review["text"]
    approval = review["approval"]
    assert approval["status"] == "pending" and "docs-writer" in approval["summary"]
    code, _ = await api(
        "POST", f"sessions/{s['id']}/approvals/{approval['id']}", {"decision": "approve"}
    )
    assert code == 200
    _, body = await api("GET", "agents", session=s["id"])
    assert any(a["name"] == "docs-writer" for a in body["agents"]) and not body["review"]
    code, got = await api("PATCH", f"sessions/{s['id']}", {"agent": "docs-writer"})
    assert code == 200 and got["options"]["agent"] == "docs-writer"
